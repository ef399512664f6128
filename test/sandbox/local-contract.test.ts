import { LocalUnsafeBackend } from "../../src/sandbox/local/backend.js";
import { backendContract } from "./backend-contract.js";

backendContract("local-unsafe", (stateRoot) => LocalUnsafeBackend.open({ stateRoot }));
