import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { backendContract } from "./backend-contract.js";

// Every create a cold start, then every create (nearly) served by the warm pool: both paths keep the contract.
backendContract("bwrap", (stateRoot) => BwrapBackend.open({ stateRoot, pool: { size: 0 } }), "cold");
backendContract("bwrap", (stateRoot) => BwrapBackend.open({ stateRoot, pool: { size: 2 } }), "pooled");
