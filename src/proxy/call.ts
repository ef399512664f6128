import { randomInt } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { UserError, toHarnessRLError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import type { GenerateContext, GenerateResult, SamplingParams } from "../engine/types.js";
import type { PromptPlan } from "../history/types.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import { ICR_SCHEMA_VERSION } from "../icr/records.js";
import { StreamDecoder } from "../tokenizer/stream-decoder.js";
import type { ProxyContext } from "./context.js";
import { toProtocolError } from "./errors.js";
import { readJsonBodyText } from "./http/body.js";
import { sendJson } from "./http/respond.js";
import { SseWriter } from "./http/sse.js";
import { buildReply, reconcileStreamed } from "./output/reply.js";
import { parseCompletion } from "./output/spans.js";
import { OutputSplitter } from "./output/splitter.js";
import type { ParsedRequest, ProtocolAdapter, ProtocolStream, Reply } from "./protocols/protocol.js";
import { checkArgumentDepth, checkContextEstimate, checkOmittedTools } from "./request-bounds.js";
import { SpecialTextGuard } from "../chat/guarded-renderer.js";

function header(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  return typeof v === "string" && v !== "" ? v : null;
}

/** The run's sampling config overrides the harness's request; max tokens is also capped by the harness and the context. */
/** `seed`: the session's seed for this call (common random numbers, sessions.ts); absent, a random one. */
export function samplingFor(ctx: ProxyContext, requestedMax: number | undefined, promptLength: number, seed?: number): SamplingParams {
  const s = ctx.sampling;
  const room = ctx.engine.model.contextWindow - promptLength;
  return {
    temperature: s.temperature,
    topP: s.topP,
    topK: s.topK,
    minP: s.minP,
    maxTokens: Math.max(1, Math.min(s.maxTokens, requestedMax ?? Infinity, room)),
    seed: seed ?? randomInt(2 ** 31),
  };
}

interface CallState {
  callId: string;
  session: SessionInfo;
  req: IncomingMessage;
  parsed: ParsedRequest;
  rawRequest: unknown;
  /** The request body as sent (its parse is `rawRequest`). */
  rawRequestJson: string;
  plan: PromptPlan;
  params: SamplingParams;
  receivedAt: number;
  engineStartAt: number | null;
  firstTokenAt: number | null;
  engineEndAt: number | null;
}

function baseRecord(ctx: ProxyContext, adapter: ProtocolAdapter, s: CallState): CallRecord {
  const { req, session, parsed, plan } = s;
  return {
    schemaVersion: ICR_SCHEMA_VERSION,
    callId: s.callId,
    sessionId: session.sessionId,
    rolloutId: session.rolloutId,
    harness: session.harness,
    agentRole: header(req, "x-harnessrl-agent-role") ?? session.agentRole,
    agentId: header(req, "x-harnessrl-agent-id") ?? header(req, "x-claude-code-session-id"),
    protocol: adapter.protocol,
    stream: parsed.stream,
    status: "ok",
    error: null,
    rawRequest: s.rawRequest,
    rawResponse: null,
    messages: parsed.conversation.messages,
    tools: parsed.conversation.tools,
    response: null,
    promptTokens: plan.promptTokens,
    completionTokens: [],
    logprobs: [],
    spans: { toolCalls: [], malformed: 0 },
    policyVersion: null,
    samplingRequested: parsed.samplingRequested,
    samplingUsed: s.params,
    finishReason: null,
    timings: { receivedAt: s.receivedAt, engineStartAt: s.engineStartAt, firstTokenAt: s.firstTokenAt, engineEndAt: s.engineEndAt, recordedAt: 0 },
    parentCallId: plan.parentCallId,
    reusedPrefixTokens: plan.reusedPrefixTokens,
    break: plan.break,
    ...(plan.realigned.length > 0 ? { realigned: plan.realigned } : {}),
    ...(parsed.omittedTools.length > 0 ? { omittedTools: parsed.omittedTools } : {}),
    spawnedByCallId: header(req, "x-harnessrl-parent-call") ?? session.spawnedByCallId,
  };
}

function writeRecord(ctx: ProxyContext, record: CallRecord, s: CallState): void {
  persistRecord(ctx, record, s);
  afterRecord(ctx, record);
}

/** The durable part: the record is committed before the response's final bytes leave. */
function persistRecord(ctx: ProxyContext, record: CallRecord, s: CallState): void {
  record.timings.recordedAt = Date.now();
  ctx.store.insertCall(record, { rawRequestJson: s.rawRequestJson });
}

/**
 * The in-memory part, run right after the answer is written: the harness cannot send a request that builds on this
 * answer before it has received it, and that request is handled in a later tick, so the planner still learns the call
 * first — without the answer waiting for it.
 */
function afterRecord(ctx: ProxyContext, record: CallRecord): void {
  if (record.status === "ok") ctx.planner.remember(record);
  if (ctx.onRecord) {
    try {
      ctx.onRecord(record);
    } catch (e) {
      ctx.onError(e);
    }
  }
}

/**
 * One model call, any protocol: authenticate → parse → plan the prompt tokens → check the context window → generate
 * token-in/token-out (streaming content as it is sampled) → parse the completion → record durably → answer. The
 * record is written before the response's final bytes, so an answered call is never lost.
 */
export async function handleModelCall<R extends ParsedRequest>(ctx: ProxyContext, adapter: ProtocolAdapter<R>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const receivedAt = Date.now();
  const session = ctx.sessions.forAgent(ctx.sessions.authenticate(req.headers), req.headers);
  // In flight from the moment it is attributed, so a rollout never looks settled while a call is being read.
  ctx.sessions.begin(session.sessionId);
  try {
    await runCall(ctx, adapter, req, res, session, receivedAt);
  } finally {
    ctx.sessions.end(session.sessionId);
  }
}

async function runCall<R extends ParsedRequest>(ctx: ProxyContext, adapter: ProtocolAdapter<R>, req: IncomingMessage, res: ServerResponse, session: SessionInfo, receivedAt: number): Promise<void> {
  const request = await readJsonBodyText(req, ctx.maxBodyBytes, ctx.bodyBudget);
  const rawRequest = request.value;
  const parsed = adapter.parse(rawRequest);
  ctx.models.check(parsed.model);
  checkArgumentDepth(parsed.conversation);
  checkOmittedTools(ctx, parsed.omittedTools);

  const { engine } = ctx;
  const window = engine.model.contextWindow;
  checkContextEstimate(parsed.conversation, engine.tokenizer, window, engine.renderer instanceof SpecialTextGuard);
  const codec = { tokenizer: engine.tokenizer, renderer: engine.renderer };
  const plan = ctx.planner.plan(session.sessionId, parsed.conversation, codec);
  if (plan.promptTokens.length >= window) {
    throw new UserError("context_length_exceeded", `the prompt is ${plan.promptTokens.length} tokens; the model's context window is ${window} tokens`, {
      details: { param: "messages" },
    });
  }

  const callId = newId("call");
  const s: CallState = {
    callId,
    session,
    req,
    parsed,
    rawRequest,
    rawRequestJson: request.text,
    plan,
    params: samplingFor(ctx, parsed.maxTokens, plan.promptTokens.length, ctx.sessions.nextSamplingSeed(session.sessionId)),
    receivedAt,
    engineStartAt: null,
    firstTokenAt: null,
    engineEndAt: null,
  };
  const reply: Reply = {
    id: adapter.newResponseId(),
    created: Math.floor(receivedAt / 1000),
    model: parsed.model,
    content: "",
    reasoning: "",
    toolCalls: [],
    stopReason: "stop",
    usage: { inputTokens: plan.promptTokens.length, outputTokens: 0 },
  };
  const headers = { "x-request-id": callId, "request-id": callId };

  // A client that goes away aborts generation.
  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort();
  };
  res.on("close", onClose);

  // The protocol stream opens with the first sampled token, so an engine that fails at once still gets a status code.
  const live: { stream: ProtocolStream | null } = { stream: null };
  let splitter: OutputSplitter | null = null;
  let onToken: (id: number) => void;
  const openStream = (sse: SseWriter): ProtocolStream => (live.stream ??= adapter.openStream(parsed, reply, sse));
  const sse = parsed.stream ? new SseWriter(res, headers) : null;
  if (sse) {
    const decoder = new StreamDecoder(engine.tokenizer);
    // Templates that open `<think>` in the generation prompt make the sample start inside the reasoning.
    const tail = engine.tokenizer.decode(plan.promptTokens.slice(-8));
    const sp = new OutputSplitter(
      { reasoning: (t) => openStream(sse).reasoning(t), content: (d) => openStream(sse).content(d) },
      { startsInReasoning: /<think>\s*$/.test(tail), endOfTurnTexts: [engine.renderer.endOfTurn, "<|endoftext|>"] },
    );
    splitter = sp;
    onToken = (id: number): void => {
      if (s.firstTokenAt === null) {
        s.firstTokenAt = Date.now();
        openStream(sse);
      }
      sp.push(decoder.push(id));
    };
  } else {
    onToken = (): void => {
      s.firstTokenAt ??= Date.now();
    };
  }

  try {
    const context: GenerateContext = { sessionId: session.sessionId, callId, messages: parsed.conversation.messages, tools: parsed.conversation.tools };
    if (session.rolloutId !== null) context.rolloutId = session.rolloutId;
    if (session.harness !== null) context.harness = session.harness;
    s.engineStartAt = Date.now();
    let result: GenerateResult;
    try {
      result = await engine.generate({ promptTokens: plan.promptTokens, params: s.params, context, signal: abort.signal, onToken });
    } catch (e) {
      s.engineEndAt = Date.now();
      const err = toHarnessRLError(e);
      const record = baseRecord(ctx, adapter as ProtocolAdapter, s);
      record.status = "error";
      record.error = { code: err.code, message: err.message, fault: err.fault };
      record.rawResponse = toProtocolError(adapter.protocol, err).body;
      // Input errors found by the engine (e.g. its own context check) are the caller's; everything else is recorded.
      if (err.fault !== "user") writeRecord(ctx, record, s);
      throw err;
    }
    s.engineEndAt = Date.now();

    // Parsed once, here, with the engine's own codec: the record keeps where the tool calls lie in the tokens.
    const { output, spans } = parseCompletion(engine.tokenizer, engine.renderer.endOfTurn, result.tokens);
    if (result.finishReason === "abort" || abort.signal.aborted) {
      const record = baseRecord(ctx, adapter as ProtocolAdapter, s);
      Object.assign(record, {
        status: "error",
        error: { code: "client_closed", message: "the client closed the connection before the answer was complete", fault: "harness" },
        completionTokens: result.tokens,
        logprobs: result.logprobs,
        spans,
        policyVersion: result.policyVersion,
        finishReason: "abort",
        ...(result.engineInstance !== undefined ? { engineInstance: result.engineInstance } : {}),
      });
      writeRecord(ctx, record, s);
      return;
    }

    buildReply(reply, output, result, () => adapter.newToolCallId());
    if (sse && splitter) {
      const st = openStream(sse);
      reconcileStreamed(reply, splitter, st);
      st.finishBody(reply);
    }

    const record = baseRecord(ctx, adapter as ProtocolAdapter, s);
    const body = adapter.buildResponse(parsed, reply);
    record.rawResponse = body;
    record.response = adapter.echoMessage(parsed, reply);
    record.completionTokens = result.tokens;
    record.logprobs = result.logprobs;
    record.spans = spans;
    record.policyVersion = result.policyVersion;
    record.finishReason = result.finishReason;
    if (result.engineInstance !== undefined) record.engineInstance = result.engineInstance;
    persistRecord(ctx, record, s);

    if (live.stream) live.stream.end(reply);
    else sendJson(res, 200, body, headers);
    afterRecord(ctx, record);
  } catch (e) {
    if (!live.stream) throw e;
    live.stream.fail(toProtocolError(adapter.protocol, e));
    ctx.onError(e);
  } finally {
    res.off("close", onClose);
  }
}
