import { connect, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import type { ProxyAddress } from "./types.js";

/**
 * Host end of the proxy bridge: a unix socket inside one sandbox's state directory (bind-mounted into the sandbox)
 * whose every connection is piped to the capture proxy's TCP address. The sandbox has no other way out, and because
 * the socket is per sandbox, connections can be attributed to it.
 */
export class HostBridge {
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  static async listen(socketPath: string, proxy: ProxyAddress): Promise<HostBridge> {
    const server = createServer({ allowHalfOpen: true });
    const bridge = new HostBridge(server);
    server.on("connection", (inbound) => bridge.pipe(inbound, proxy));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return bridge;
  }

  private pipe(inbound: Socket, proxy: ProxyAddress): void {
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
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
