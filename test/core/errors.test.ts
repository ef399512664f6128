import { describe, expect, it } from "vitest";
import { EngineError, InfraError, UserError, toHarnessRLError } from "../../src/core/errors.js";

describe("error hierarchy", () => {
  it("keeps fault, code and retryability on each subtype", () => {
    const u = new UserError("invalid_request", "bad field");
    expect(u.fault).toBe("user");
    expect(u.retryable).toBe(false);
    expect(u.name).toBe("UserError");
    const e = new EngineError("engine_overloaded", "busy", { retryable: true });
    expect(e.fault).toBe("engine");
    expect(e.retryable).toBe(true);
  });

  it("wraps unknown throwables as internal infrastructure faults", () => {
    const w = toHarnessRLError(new TypeError("boom"));
    expect(w).toBeInstanceOf(InfraError);
    expect(w.code).toBe("internal");
    expect(w.message).toBe("boom");
  });
});
