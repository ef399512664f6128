import { chmod, chown } from "node:fs/promises";
import { createServer } from "node:net";
import type { Server, Socket } from "node:net";
import type { ServiceHandler } from "./types.js";
import type { Owner } from "./workspace.js";

/** One request's bytes at most; a bigger one is answered with an error and closed. */
export const SERVICE_MAX_REQUEST_BYTES = 1024 * 1024;
/** Requests handled at once per service; further connections wait in the kernel's backlog. */
const MAX_CONCURRENT = 8;
/** A client that sends nothing complete within this long is dropped (a stalled connection holds nothing). */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * A host-side service a sandbox's commands reach through a unix socket in a directory bound into the sandbox: one
 * request per connection (the client writes it and half-closes), one answer (the host writes it and closes). What
 * runs here runs on the host, out of the sandbox's reach: e.g. task tools whose calls feed rewards, so the record of
 * those calls is the host's and a policy cannot forge it by writing files.
 */
export class HostService {
  private readonly sockets = new Set<Socket>();
  private active = 0;
  private constructor(private readonly server: Server) {}

  static async listen(socketPath: string, handler: ServiceHandler, owner: Owner | undefined): Promise<HostService> {
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: false });
    server.maxConnections = 64;
    const service = new HostService(server);
    server.on("connection", (sock) => service.accept(sock, handler));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    if (owner) await chown(socketPath, owner.uid, owner.gid);
    else await chmod(socketPath, 0o600);
    return service;
  }

  private accept(sock: Socket, handler: ServiceHandler): void {
    this.sockets.add(sock);
    sock.on("close", () => this.sockets.delete(sock));
    sock.on("error", () => sock.destroy());
    sock.setTimeout(REQUEST_TIMEOUT_MS, () => sock.destroy());
    const chunks: Buffer[] = [];
    let size = 0;
    sock.on("data", (d: Buffer) => {
      size += d.length;
      if (size > SERVICE_MAX_REQUEST_BYTES) {
        sock.end(JSON.stringify({ error: `request over ${SERVICE_MAX_REQUEST_BYTES} bytes` }));
        sock.destroySoon();
        return;
      }
      chunks.push(d);
    });
    sock.on("end", () => {
      if (size > SERVICE_MAX_REQUEST_BYTES) return;
      if (this.active >= MAX_CONCURRENT) {
        sock.end(JSON.stringify({ error: "busy" }));
        return;
      }
      this.active++;
      sock.setTimeout(0);
      handler(Buffer.concat(chunks).toString("utf8"))
        .catch((e: unknown) => JSON.stringify({ error: e instanceof Error ? e.message : String(e) }))
        .then((answer) => {
          if (!sock.destroyed) sock.end(answer);
        })
        .finally(() => this.active--);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
