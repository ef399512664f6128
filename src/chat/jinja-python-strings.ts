import { Environment } from "@huggingface/jinja";
import { UserError } from "../core/errors.js";

/**
 * @huggingface/jinja 0.5.x implements `str.strip/lstrip/rstrip` without Python's `chars` argument: `x.strip('\n')`
 * trims all whitespace. Real templates rely on the argument (Qwen3: `reasoning_content.strip('\n')`,
 * `content.lstrip('\n')`), so content starting with spaces would render differently from `apply_chat_template` and
 * from what the model was trained on. This installs Python's semantics on the library's string values, once, by
 * wrapping their (lazily built, per-value) builtins table. The library does not export its value classes, so they are
 * taken from values it creates.
 */

type Runtime = { value: unknown };
type RuntimeCtor = new (value: unknown) => Runtime;

let installed = false;

function pyStrip(s: string, chars: unknown, left: boolean, right: boolean): string {
  if (chars === null || chars === undefined) return left && right ? s.trim() : left ? s.trimStart() : s.trimEnd();
  if (typeof chars !== "string") throw new UserError("invalid_chat_template", "strip arg must be None or str");
  const set = new Set(chars);
  let start = 0;
  let end = s.length;
  if (left) while (start < end && set.has(s[start] as string)) start++;
  if (right) while (end > start && set.has(s[end - 1] as string)) end--;
  return s.slice(start, end);
}

export function installPythonStringMethods(): void {
  if (installed) return;
  installed = true;
  const env = new Environment();
  const StringValue = (env.set("__s", "") as Runtime).constructor as RuntimeCtor;
  const FunctionValue = (env.set("__f", () => null) as Runtime).constructor as new (fn: (args: Runtime[]) => Runtime) => Runtime;
  const proto = StringValue.prototype as object;
  const original = Object.getOwnPropertyDescriptor(proto, "builtins")?.get;
  if (!original) return;
  const patched = new WeakSet<object>();
  Object.defineProperty(proto, "builtins", {
    configurable: true,
    get(this: Runtime) {
      const map = original.call(this) as Map<string, Runtime>;
      if (!patched.has(map)) {
        patched.add(map);
        const value = this.value as string;
        const make = (left: boolean, right: boolean): Runtime => new FunctionValue((args) => new StringValue(pyStrip(value, args[0]?.value, left, right)));
        map.set("strip", make(true, true));
        map.set("lstrip", make(true, false));
        map.set("rstrip", make(false, true));
      }
      return map;
    },
  });
}
