import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * LoRA policies on a remote server (`?lora=1`): a policy version's model directory holds its adapter in the PEFT layout
 * under `adapter/` (written by the torch worker with `model.lora`); the server loads it under a name per version
 * (`policy-v<N>`) through its runtime adapter-loading endpoint, and requests name that adapter. The server itself must
 * serve the adapter's base model (adapter_config.json `base_model_name_or_path`) with adapters enabled.
 */
export const ADAPTER_SUBDIR = "adapter";

/** The adapter directory of a policy version, or null when the version is the base itself (no adapter yet). */
export function adapterDir(modelDir: string): string | null {
  const dir = join(modelDir, ADAPTER_SUBDIR);
  return existsSync(join(dir, "adapter_config.json")) ? dir : null;
}

export interface AdapterEndpoints {
  load(name: string, path: string): Promise<void>;
  unload(name: string): Promise<void>;
}

/**
 * Which adapter requests use. The previous version's adapter stays loaded until the next swap, so requests that were
 * sent to it before the swap can finish; older ones are unloaded (a failed unload only costs server memory).
 */
export class AdapterSlots {
  /** The adapter requests name; undefined while the base model is served. */
  current: string | undefined;
  private readonly loaded: string[] = [];

  async swap(modelDir: string, version: number, endpoints: AdapterEndpoints): Promise<void> {
    const dir = adapterDir(modelDir);
    if (dir === null) {
      this.current = undefined;
      return;
    }
    const name = `policy-v${version}`;
    if (!this.loaded.includes(name)) {
      await endpoints.load(name, dir);
      this.loaded.push(name);
    }
    this.current = name;
    while (this.loaded.length > 2) {
      const old = this.loaded.shift() as string;
      await endpoints.unload(old).catch(() => undefined);
    }
  }
}
