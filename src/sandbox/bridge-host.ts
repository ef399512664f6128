import { connect, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import type { ProxyAddress } from "./types.js";

/**
 * Host end of the proxy bridge: a unix socket inside one sandbox's state directory (bind-mounted into the sandbox)
 * whose connections are piped to the capture proxy's TCP address. The sandbox has no other way out, and because the
 * socket is per sandbox, connections can be attributed to it.
 *
 * The socket exists for the sandbox's whole life (a pooled sandbox gets it before it knows its proxy), but it forwards
 * only while `target` is set: the owner sets it while an exec that uses the proxy runs. Any other connection is closed
 * at once, so a command run with `proxy: false` cannot reach the proxy by connecting to the socket directly.
 */
export class HostBridge {
  /** Where connections go; undefined: refuse them (and close those open). */
  private current: ProxyAddress | undefined;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  static async listen(socketPath: string): Promise<HostBridge> {
    const server = createServer({ allowHalfOpen: true });
    const bridge = new HostBridge(server);
    server.on("connection", (inbound) => bridge.pipe(inbound));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return bridge;
  }

  get target(): ProxyAddress | undefined {
    return this.current;
  }

  set target(proxy: ProxyAddress | undefined) {
    this.current = proxy;
    if (!proxy) {
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
    }
  }

  private pipe(inbound: Socket): void {
    const proxy = this.current;
    if (!proxy) {
      inbound.destroy();
      return;
    }
    const outbound = connect({ host: proxy.host, port: proxy.port, allowHalfOpen: true });
    for (const s of [inbound, outbound]) {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    }
    const close = (): void => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on("error", close);
    outbound.on("error", close);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  }

  async close(): Promise<void> {
    this.target = undefined;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
