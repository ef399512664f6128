/**
 * In-sandbox end of the proxy bridge, hosted by the exec agent: listens on 127.0.0.1:<proxy port> (the proxy's own
 * port number, so base URLs stay simple) and pipes each connection to the bind-mounted unix socket whose host end
 * leads to the capture proxy. It listens only while at least one exec that asked for the proxy runs, so a command
 * run with `proxy: false` after the harness (a verifier) cannot reach the model. Node built-ins only.
 */
import { connect, createServer } from "node:net";
import type { Server, Socket } from "node:net";

export class Forwarder {
  private port: number | undefined;
  private users = 0;
  private server: Server | undefined;
  private opening: Promise<void> | undefined;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly socketPath: string) {}

  configure(port: number): void {
    this.port = port;
  }

  /** One more exec needs the proxy: resolves once the listener accepts connections. */
  async acquire(): Promise<void> {
    this.users++;
    try {
      this.opening ??= this.open();
      await this.opening;
    } catch (e) {
      this.users--;
      this.opening = undefined;
      throw e;
    }
  }

  /** An exec that needed the proxy ended: the last one closes the listener and every forwarded connection. */
  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users > 0 || !this.server) return;
    this.server.close();
    this.server = undefined;
    this.opening = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /** Listens once on an ephemeral port and closes: the first real listen then skips node's lazy initialisation. */
  async warmUp(): Promise<void> {
    const server = createServer();
    await new Promise<void>((resolve) => {
      server.once("error", () => resolve());
      server.listen(0, "127.0.0.1", () => resolve());
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private open(): Promise<void> {
    const port = this.port;
    if (port === undefined) return Promise.reject(new Error("no proxy port configured for this sandbox"));
    const server = createServer({ allowHalfOpen: true }, (inbound) => this.pipe(inbound));
    return new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        server.on("error", (e) => process.stderr.write(`harnessrl agent: proxy forwarder: ${e.message}\n`));
        this.server = server;
        resolve();
      });
    });
  }

  private pipe(inbound: Socket): void {
    const outbound = connect({ path: this.socketPath, allowHalfOpen: true });
    const close = (): void => {
      inbound.destroy();
      outbound.destroy();
    };
    for (const s of [inbound, outbound]) {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", close);
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  }
}
