import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { backendContract } from "./backend-contract.js";

backendContract("bwrap", (stateRoot) => BwrapBackend.open({ stateRoot }));
