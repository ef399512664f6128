import { describe, expect, it } from "vitest";
import { EngineError, HarnessError, InfraError, UserError, errorOfCode, toHarnessRLError } from "../../src/core/errors.js";

describe("error hierarchy", () => {
  it("keeps fault, code and retryability on each subtype", () => {
    const u = new UserError("invalid_config", "bad field");
    expect(u.fault).toBe("user");
    expect(u.retryable).toBe(false);
    expect(u.name).toBe("UserError");
    const e = new EngineError("engine_overloaded", "busy", { retryable: true });
    expect(e.fault).toBe("engine");
    expect(e.retryable).toBe(true);
    const h = new HarnessError("invalid_request", "messages: required");
    expect(h.fault).toBe("harness");
    expect(h.toJSON()).toMatchObject({ name: "HarnessError", fault: "harness", code: "invalid_request", retryable: false });
  });

  it("accepts only the codes of its own fault (checked by tsc -p tsconfig.test.json)", () => {
    // @ts-expect-error sandbox_agent is an infrastructure code, not the user's
    const wrongFault = new UserError("sandbox_agent", "x");
    // @ts-expect-error not a code in the catalogue at all
    const notACode = new InfraError("bad_thing", "x");
    // @ts-expect-error a retired synonym: the catalogue spells it invalid_engine_spec
    const synonym = new UserError("bad_engine_spec", "x");
    expect([wrongFault.fault, notACode.fault, synonym.fault]).toEqual(["user", "infra", "user"]);
  });

  it("takes retryability from the catalogue unless the thrower says otherwise", () => {
    expect(new EngineError("engine_timeout", "slow").retryable).toBe(true);
    expect(new EngineError("engine_timeout", "slow mid-stream", { retryable: false }).retryable).toBe(false);
    expect(new InfraError("worker_died", "exit 9").retryable).toBe(true);
    expect(new InfraError("sandbox_cleanup", "left a dir").retryable).toBe(false);
  });

  it("builds the class a run-time code's fault names", () => {
    expect(errorOfCode("invalid_model_config", "dtype")).toBeInstanceOf(UserError);
    expect(errorOfCode("harness_unsettled", "in flight")).toBeInstanceOf(HarnessError);
    const oom = errorOfCode("out_of_memory", "CUDA");
    expect(oom).toBeInstanceOf(EngineError);
    expect(oom.retryable).toBe(true);
    expect(errorOfCode("worker_protocol", "garbage")).toBeInstanceOf(InfraError);
  });

  it("wraps unknown throwables as internal infrastructure faults", () => {
    const w = toHarnessRLError(new TypeError("boom"));
    expect(w).toBeInstanceOf(InfraError);
    expect(w.code).toBe("internal");
    expect(w.message).toBe("boom");
  });
});
