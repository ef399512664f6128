import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { exportGguf } from "../../src/gguf/export.js";
import { gpt2ByteChars, readVocab } from "../../src/gguf/vocab.js";
import { GgmlType, gguf, writeGguf } from "../../src/gguf/writer.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { readModelTensors, readSafetensorsHeader, readTensorF32, writeSafetensors } from "../../src/weights/safetensors.js";

const root = mkdtempSync(join(tmpdir(), "harnessrl-gguf-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("safetensors", () => {
  it("round-trips float32 tensors and reads F16/BF16 by converting to float32", () => {
    const file = join(root, "a.safetensors");
    writeSafetensors(file, [
      { name: "w", dtype: "F32", shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 0, 1e-3, -7]) },
      { name: "b", dtype: "F32", shape: [1], data: Float32Array.from([42]) },
    ]);
    const { tensors } = readSafetensorsHeader(file);
    expect(tensors.map((t) => [t.name, t.shape])).toEqual([["w", [2, 3]], ["b", [1]]]);
    expect((tensors[0]?.offset ?? 1) % 8).toBe(0);
    expect(Array.from(readTensorF32(tensors[0] as NonNullable<(typeof tensors)[0]>))).toEqual(Array.from(Float32Array.from([1, -2, 3.5, 0, 1e-3, -7])));

    // Hand-built half-precision file: F16 1.0 = 0x3c00, -2.0 = 0xc000; BF16 1.0 = 0x3f80, 3.0 = 0x4040.
    const header = JSON.stringify({ h: { dtype: "F16", shape: [2], data_offsets: [0, 4] }, g: { dtype: "BF16", shape: [2], data_offsets: [4, 8] } });
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    const data = Buffer.alloc(8);
    [0x3c00, 0xc000, 0x3f80, 0x4040].forEach((v, i) => data.writeUInt16LE(v, i * 2));
    const half = join(root, "half.safetensors");
    writeFileSync(half, Buffer.concat([len, Buffer.from(header), data]));
    const t = new Map(readSafetensorsHeader(half).tensors.map((x) => [x.name, x]));
    expect(Array.from(readTensorF32(t.get("h") as never))).toEqual([1, -2]);
    expect(Array.from(readTensorF32(t.get("g") as never))).toEqual([1, 3]);
  });

  it("reads sharded checkpoints through model.safetensors.index.json", () => {
    const dir = join(root, "sharded");
    mkdirSync(dir);
    writeSafetensors(join(dir, "model-00001-of-00002.safetensors"), [{ name: "a", dtype: "F32", shape: [1], data: Float32Array.from([1]) }]);
    writeSafetensors(join(dir, "model-00002-of-00002.safetensors"), [{ name: "b", dtype: "F32", shape: [1], data: Float32Array.from([2]) }]);
    writeFileSync(join(dir, "model.safetensors.index.json"), JSON.stringify({ weight_map: { a: "model-00001-of-00002.safetensors", b: "model-00002-of-00002.safetensors" } }));
    const m = readModelTensors(dir);
    expect(readTensorF32(m.get("b") as never)[0]).toBe(2);
  });

  it("rejects corrupt headers with a UserError", () => {
    const bad = join(root, "bad.safetensors");
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(5n);
    writeFileSync(bad, Buffer.concat([len, Buffer.from("{nope")]));
    expect(() => readSafetensorsHeader(bad)).toThrow(UserError);
    const wrongSize = join(root, "size.safetensors");
    const h = JSON.stringify({ x: { dtype: "F32", shape: [4], data_offsets: [0, 8] } });
    len.writeBigUInt64LE(BigInt(h.length));
    writeFileSync(wrongSize, Buffer.concat([len, Buffer.from(h), Buffer.alloc(8)]));
    expect(() => readSafetensorsHeader(wrongSize)).toThrow(/shape needs 16/);
  });
});

describe("GGUF", () => {
  it("writes a v3 file that llama.cpp's GGUF reader parses: metadata, tensor infos, aligned offsets, data", async () => {
    const file = join(root, "t.gguf");
    const w = Float32Array.from({ length: 6 }, (_, i) => i + 0.5);
    writeGguf(
      file,
      new Map([
        ["general.architecture", gguf.str("qwen3")],
        ["x.count", gguf.u32(7)],
        ["x.eps", gguf.f32(0.25)],
        ["x.flag", gguf.bool(true)],
        ["x.words", gguf.strings(["a", "bé"])],
        ["x.ints", gguf.i32s([1, -2])],
      ]),
      [
        { name: "w", shape: [2, 3], type: GgmlType.F32, writeData: (write) => write(new Uint8Array(w.buffer)) },
        { name: "v", shape: [3], type: GgmlType.F32, writeData: (write) => write(new Uint8Array(Float32Array.from([9, 8, 7]).buffer)) },
      ],
    );
    const info = await readGgufFileInfo(file, { logWarnings: false });
    expect(info.version).toBe(3);
    const md = info.metadata as unknown as Record<string, Record<string, unknown>>;
    expect(md.x).toMatchObject({ count: 7, eps: 0.25, flag: true, words: ["a", "bé"], ints: [1, -2] });
    const [tw, tv] = info.fullTensorInfo ?? [];
    expect(tw).toMatchObject({ name: "w", dimensions: [3, 2] });
    expect(Number(tv?.offset) % 32).toBe(0);
    const bytes = readFileSync(file);
    const dataStart = bytes.length - 32 - 12; // w padded to 32 bytes, then v (12 bytes)
    expect(Array.from(new Float32Array(bytes.buffer.slice(bytes.byteOffset + dataStart, bytes.byteOffset + dataStart + 24)))).toEqual(Array.from(w));
  });

  it("exports qwen3 and qwen2 model dirs with llama.cpp tensor names, hyper-parameters and a byte vocabulary", async () => {
    for (const modelType of ["qwen3", "qwen2"] as const) {
      const dir = join(root, modelType);
      writeRandomModelDir(dir, { modelType, hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 64, tieWordEmbeddings: modelType === "qwen3", seed: 1 });
      const out = join(root, `${modelType}.gguf`);
      exportGguf(dir, out);
      const info = await readGgufFileInfo(out, { logWarnings: false });
      const md = info.metadata as unknown as Record<string, Record<string, unknown>>;
      expect(md.general).toMatchObject({ architecture: modelType });
      expect(md[modelType]).toMatchObject({ block_count: 2, embedding_length: 32, feed_forward_length: 64, context_length: 8192, attention: { head_count: 4, head_count_kv: 2, key_length: 8, value_length: 8 } });
      const names = (info.fullTensorInfo ?? []).map((t) => t.name);
      expect(names).toContain("blk.1.ffn_down.weight");
      expect(names.includes("blk.0.attn_q_norm.weight")).toBe(modelType === "qwen3");
      expect(names.includes("blk.0.attn_q.bias")).toBe(modelType === "qwen2");
      expect(names.includes("output.weight")).toBe(modelType === "qwen2");
      const tok = md.tokenizer as { ggml: { model: string; tokens: string[]; eos_token_id: number; token_type: number[] } };
      expect(tok.ggml.model).toBe("gpt2");
      expect(tok.ggml.tokens).toHaveLength(265);
      expect(tok.ggml.tokens[258]).toBe("<|im_end|>");
      expect(tok.ggml.eos_token_id).toBe(258);
      expect(tok.ggml.token_type[257]).toBe(3);
    }
  });

  it("writes GPT-2 byte characters for the 256 byte tokens and pads to vocab_size", () => {
    const chars = gpt2ByteChars();
    expect(new Set(chars).size).toBe(256);
    expect(chars[65]).toBe("A");
    expect(chars[10]).toBe("Ċ");
    expect(chars[32]).toBe("Ġ");
    const dir = join(root, "qwen3");
    expect(readVocab(dir, 300).tokens[299]).toBe("[PAD299]");
    expect(() => readVocab(dir, 100)).toThrow(UserError);
  });

  it("refuses checkpoints whose tensor shapes do not match config.json", () => {
    const dir = join(root, "broken");
    writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 32, numLayers: 1, numHeads: 4, numKvHeads: 2, intermediateSize: 64, seed: 1 });
    const cfg = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dir, "config.json"), JSON.stringify({ ...cfg, intermediate_size: 65 }));
    expect(() => exportGguf(dir, join(root, "broken.gguf"))).toThrow(/expected 65x32/);
  });
});
