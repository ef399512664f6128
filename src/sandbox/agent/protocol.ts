/**
 * Wire protocol between the control plane and a sandbox's exec agent, over the agent's stdin (host → agent) and
 * stdout (agent → host). Binary frames, because command output is arbitrary bytes:
 *
 *   type (u8) | exec id (u32 BE) | payload length (u32 BE) | payload
 *
 * Control payloads are JSON; STDIN/STDOUT/STDERR payloads are raw bytes. Node built-ins only: this file also runs
 * inside the sandbox, from dist/.
 */
export const FrameType = {
  /** agent → host, id 0: the agent is up ({@link ReadyReport}). */
  ready: 1,
  /** host → agent: run a command ({@link ExecRequest}); followed by one STDIN frame when `stdin` is true. */
  exec: 2,
  /** host → agent: the whole stdin of an exec (the agent writes it and closes the command's stdin). */
  stdin: 3,
  /** host → agent: kill the exec's whole tree now (timeout). */
  kill: 4,
  /** host → agent, id 0: where the proxy forwarder listens ({@link ProxyConfig}). */
  proxy: 5,
  /** agent → host: output of an exec. */
  stdout: 6,
  stderr: 7,
  /** agent → host: the exec is over, nothing of it runs any more ({@link ExitReport}). */
  exit: 8,
  /** agent → host: the exec could not be started for an infrastructure reason ({@link ErrorReport}). */
  error: 9,
  /** agent → host: the command has been spawned (an exec the agent died before starting can be retried). */
  started: 10,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export interface ReadyReport {
  pid: number;
  /** Threads of the agent at startup (they count against the sandbox's pids limit). */
  threads: number;
}

export interface ExecRequest {
  argv: string[];
  /** Absolute path as the command sees it. */
  cwd: string;
  /** The complete environment of the command. */
  env: Record<string, string>;
  stdin: boolean;
  /** The command needs the proxy forwarder listening while it runs. */
  proxy: boolean;
}

export interface ExitReport {
  code: number | null;
  signal: string | null;
}

export interface ErrorReport {
  /** `bridge`: the proxy forwarder could not listen; `spawn`: the agent could not start the command. */
  kind: "bridge" | "spawn";
  message: string;
}

export interface ProxyConfig {
  port: number;
}

const HEADER = 9;
/** Upper bound of one frame: larger means a corrupted stream (stdin is the only big payload; 1 GiB is absurd). */
export const MAX_FRAME = 1 << 30;

export function encodeFrame(type: FrameType, id: number, payload: Uint8Array | string = ""): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const frame = Buffer.allocUnsafe(HEADER + body.length);
  frame.writeUInt8(type, 0);
  frame.writeUInt32BE(id, 1);
  frame.writeUInt32BE(body.length, 5);
  frame.set(body, HEADER);
  return frame;
}

export function encodeJson(type: FrameType, id: number, value: unknown): Buffer {
  return encodeFrame(type, id, JSON.stringify(value));
}

/** Reassembles frames from a byte stream; throws on a malformed stream (the peer is then treated as broken). */
export class FrameDecoder {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(private readonly onFrame: (type: number, id: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    if (this.bufferedBytes < HEADER) return;
    let data = this.buffered.length === 1 ? chunk : Buffer.concat(this.buffered);
    let offset = 0;
    while (data.length - offset >= HEADER) {
      const length = data.readUInt32BE(offset + 5);
      if (length > MAX_FRAME) throw new Error(`malformed frame (length ${length})`);
      if (data.length - offset < HEADER + length) break;
      const type = data.readUInt8(offset);
      const id = data.readUInt32BE(offset + 1);
      const payload = data.subarray(offset + HEADER, offset + HEADER + length);
      offset += HEADER + length;
      this.onFrame(type, id, payload);
    }
    data = data.subarray(offset);
    this.buffered = data.length > 0 ? [data] : [];
    this.bufferedBytes = data.length;
  }
}

export function parseJson<T>(payload: Buffer): T {
  return JSON.parse(payload.toString("utf8")) as T;
}
