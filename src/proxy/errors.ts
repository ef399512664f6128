import { toHarnessRLError, type ErrorCode, type HarnessRLError } from "../core/errors.js";
import type { Protocol } from "../icr/records.js";

/**
 * The proxy's single error boundary: every failure (ours, the caller's, the engine's) is a HarnessRLError by the
 * time it reaches here, and this module alone decides its HTTP status and its body in the caller's protocol.
 */

/** HTTP status for user-fault error codes raised anywhere in the proxy; the other user and all harness codes are 400. */
const USER_STATUS: Partial<Record<ErrorCode<"user">, number>> = {
  unauthorized: 401,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
};

export function httpStatusOf(e: HarnessRLError): number {
  switch (e.fault) {
    case "user":
      return USER_STATUS[e.code as ErrorCode<"user">] ?? 400;
    case "harness":
      return 400;
    case "engine":
      return e.retryable ? 503 : 500;
    case "infra":
      return e.code === "proxy_busy" ? 503 : 500;
  }
}

function anthropicType(status: number, e: HarnessRLError): string {
  if ((e.fault === "engine" || e.code === "proxy_busy") && e.retryable) return "overloaded_error";
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

function openaiType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export interface ProtocolError {
  status: number;
  body: Record<string, unknown>;
}

/** Converts anything thrown into the caller's protocol error shape. */
export function toProtocolError(protocol: Protocol, thrown: unknown): ProtocolError {
  const e = toHarnessRLError(thrown);
  let status = httpStatusOf(e);
  if (protocol === "anthropic-messages") {
    // Anthropic signals a retryable overload with 529; its SDKs and Claude Code back off and retry on it.
    if ((e.fault === "engine" || e.code === "proxy_busy") && e.retryable) status = 529;
    return { status, body: { type: "error", error: { type: anthropicType(status, e), message: e.message } } };
  }
  const param = typeof e.details?.param === "string" ? e.details.param : null;
  return { status, body: { error: { message: e.message, type: openaiType(status), param, code: e.code } } };
}
