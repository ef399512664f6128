/**
 * In-sandbox end of the proxy bridge, run by the host's node inside the sandbox before the command:
 *   node forwarder.js <port> <unix socket path>
 * Listens on 127.0.0.1:<port> (the proxy's own port number, so base URLs stay simple) and pipes each connection to
 * the bind-mounted unix socket. Prints "ready" on fd 3 and closes it once listening, which the wrapper waits for.
 * Plain node built-ins only: this file is executed standalone from dist/.
 */
import { closeSync, writeSync } from "node:fs";
import { connect, createServer } from "node:net";

const port = Number(process.argv[2]);
const socketPath = process.argv[3];
if (!Number.isInteger(port) || port <= 0 || port > 65535 || !socketPath) {
  process.stderr.write("harnessrl forwarder: usage: forwarder.js <port> <unix socket>\n");
  process.exit(2);
}

const server = createServer({ allowHalfOpen: true }, (inbound) => {
  const outbound = connect({ path: socketPath, allowHalfOpen: true });
  const close = (): void => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on("error", close);
  outbound.on("error", close);
  inbound.pipe(outbound);
  outbound.pipe(inbound);
});

server.on("error", (e) => {
  process.stderr.write(`harnessrl forwarder: ${e.message}\n`);
  process.exit(1);
});

server.listen(port, "127.0.0.1", () => {
  try {
    writeSync(3, "ready\n");
    closeSync(3);
  } catch {
    // no readiness pipe (run by hand)
  }
});
