import { TOOL_LOG_DIR } from "../task.js";

/**
 * `./calc "<expression>"`: the arithmetic family's tool. Evaluates + - * / and parentheses (also × ÷ and `x` between
 * numbers) exactly for integers (BigInt), prints the result, and appends `{expr, result}` or `{expr, error}` to
 * `.harnessrl/logs/calc.jsonl` next to itself: the process signal the verifier reads.
 */
export const CALC_PROGRAM = String.raw`#!/usr/bin/env node
"use strict";
const fs = require("fs");
const path = require("path");
const LOG = path.join(__dirname, "${TOOL_LOG_DIR}", "calc.jsonl");
function log(entry) {
  try {
    fs.mkdirSync(path.dirname(LOG), { recursive: true });
    fs.appendFileSync(LOG, JSON.stringify(entry) + "\n");
  } catch (e) { /* logging must never break the tool */ }
}
function tokenize(src) {
  const toks = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) { i++; continue; }
    if (/[0-9.]/.test(c)) {
      let j = i;
      while (j < src.length && /[0-9.,]/.test(src[j])) j++;
      toks.push({ t: "num", v: src.slice(i, j).replace(/,/g, "") });
      i = j;
      continue;
    }
    const op = { "+": "+", "-": "-", "*": "*", "/": "/", "(": "(", ")": ")", "\u00d7": "*", "\u00f7": "/", "x": "*", "X": "*", "\u2212": "-" }[c];
    if (!op) throw new Error("unexpected character '" + c + "'");
    toks.push({ t: "op", v: op });
    i++;
  }
  return toks;
}
function evaluate(src) {
  const toks = tokenize(src);
  let pos = 0;
  const exact = toks.every((t) => t.t !== "num" || /^[0-9]+$/.test(t.v)) && !toks.some((t) => t.v === "/");
  const num = (s) => (exact ? BigInt(s) : Number(s));
  function peek() { return toks[pos]; }
  function expr() {
    let v = term();
    while (peek() && (peek().v === "+" || peek().v === "-")) {
      const op = toks[pos++].v;
      const r = term();
      v = op === "+" ? v + r : v - r;
    }
    return v;
  }
  function term() {
    let v = factor();
    while (peek() && (peek().v === "*" || peek().v === "/")) {
      const op = toks[pos++].v;
      const r = factor();
      if (op === "/" && r === 0) throw new Error("division by zero");
      v = op === "*" ? v * r : v / r;
    }
    return v;
  }
  function factor() {
    const t = toks[pos++];
    if (!t) throw new Error("unexpected end of expression");
    if (t.t === "num") {
      if (!/^([0-9]+\.?[0-9]*|\.[0-9]+)$/.test(t.v)) throw new Error("bad number '" + t.v + "'");
      return num(t.v);
    }
    if (t.v === "-") return -factor();
    if (t.v === "+") return factor();
    if (t.v === "(") {
      const v = expr();
      const close = toks[pos++];
      if (!close || close.v !== ")") throw new Error("missing ')'");
      return v;
    }
    throw new Error("unexpected '" + t.v + "'");
  }
  const v = expr();
  if (pos !== toks.length) throw new Error("unexpected '" + toks[pos].v + "'");
  if (typeof v === "bigint") return v.toString();
  if (!Number.isFinite(v)) throw new Error("result is not finite");
  return String(Number.isInteger(v) ? v : Number(v.toFixed(10)));
}
const expr = process.argv.slice(2).join(" ").trim();
if (!expr) {
  process.stderr.write("usage: ./calc \"<expression>\"   e.g. ./calc \"4817 * 29\"\n");
  process.exit(2);
}
try {
  const result = evaluate(expr);
  log({ expr: expr, result: result });
  process.stdout.write(result + "\n");
} catch (e) {
  log({ expr: expr, error: e.message });
  process.stderr.write("error: " + e.message + "\n");
  process.exit(1);
}
`;

/** The `calc` tool as a workspace file (arith, calcfile). */
export const CALC_FILE = { content: CALC_PROGRAM, encoding: "utf8", executable: true } as const;
