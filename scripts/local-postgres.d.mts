// Types of scripts/local-postgres.mjs for the TypeScript tests and scripts that start a throwaway Postgres.
import type { ChildProcess } from "node:child_process";

export interface LocalPostgresOptions {
  /** Default: a free port. */
  port?: number;
  /** listen_addresses; default 127.0.0.1 ("*" to serve nodes in other network namespaces). */
  listen?: string;
  /** Data + socket directory; default a new temp dir, removed by stop(). */
  dir?: string;
  /** The role nodes log in as and its database; default harnessrl / a random password / harnessrl. */
  user?: string;
  password?: string;
  database?: string;
  /** fsync on (default off: a test server). */
  fsync?: boolean;
  log?: (line: string) => void;
  /** Run the server inside this network namespace (`ip netns` name); `listen` is an address there, port default 5432. */
  netns?: string;
}

export interface LocalPostgres {
  /** postgres://user:password@host:port/database: a store spec for openStore. */
  url: string;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  dir: string;
  /** Unix socket directory (the `postgres` superuser logs in there without a password). */
  socketDir: string;
  process: ChildProcess | null;
  /** Stops the server, keeping its data. */
  pause(): Promise<void>;
  /** Starts it again on the same port and data. */
  resume(): Promise<void>;
  /** Stops it and removes its directory (unless `dir` was given). */
  stop(): Promise<void>;
}

export declare function startLocalPostgres(options?: LocalPostgresOptions): Promise<LocalPostgres>;
export declare function postgresBinDir(): string;
export declare function freePort(host?: string): Promise<number>;
