import type { HarnessError } from "../../core/errors.js";
import { badField } from "./validate.js";

/** Content part types that carry media this text-only proxy cannot pass to the policy. */
const MEDIA_KINDS: Record<string, string> = {
  image_url: "image",
  input_image: "image",
  image: "image",
  input_audio: "audio",
  audio: "audio",
  file: "file",
  input_file: "file",
  document: "document",
  video: "video",
};

/** The 400 for a content part we cannot represent, saying what it was. */
export function unsupportedPart(param: string, type: string): HarnessError {
  const kind = MEDIA_KINDS[type];
  if (kind) {
    return badField(param, `${kind} content (type "${type}") is not supported: this proxy serves a text-only policy`, "unsupported_content");
  }
  return badField(param, `content part type "${type}" is not supported here`, "unsupported_content");
}

/** Joins text parts. One separator everywhere so that a harness switching between a string and text blocks renders the same. */
export function joinText(texts: readonly string[]): string {
  return texts.length === 1 ? (texts[0] as string) : texts.join("\n");
}

/** Parses tool-call argument text into an object; non-object JSON is wrapped so templates always see an object. */
export function parseArguments(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    return { value: v };
  } catch {
    return { raw: text };
  }
}
