// Public surface of the capture proxy.
export { DEFAULT_MAX_BODY_BYTES, ProxyServer } from "./server.js";
export type { ProxyOptions, ProxyUrls } from "./server.js";
export type { IssueSessionRequest, IssuedSession } from "./sessions.js";
export { toProtocolError } from "./errors.js";
export { callLogLine } from "./call-log.js";
