import type { ChatMessage } from "../chat/types.js";
import { messageFromKey, valueKey } from "./message-key.js";
import type { ProducedCall } from "./produced-call.js";

/**
 * A session's produced histories as a trie over message content keys. Every call inserts the path
 * `messages ++ [response]`; calls whose histories share a prefix share nodes, so the trie grows with the number of
 * distinct messages (linear in a session), not with the sum of history lengths. One walk of a request's messages
 * finds the longest shared prefix, the candidate parents on the way and the retry target at the end. Nodes keep only
 * the key (the message's canonical text), from which the message can be rebuilt without its ids.
 */
export class TrieNode {
  readonly children = new Map<string, TrieNode>();
  /** Children that are assistant turns with tool calls, by `valueKey`: a re-serialised turn still finds its node. */
  readonly valueChildren = new Map<string, TrieNode>();
  /** Calls whose `messages ++ [response]` ends here (parent candidates). */
  readonly ends: ProducedCall[] = [];
  /** Calls whose request `messages` ends here (retry / regeneration targets). */
  readonly requests: ProducedCall[] = [];
  /** The latest call whose history passes through this node. */
  latest: ProducedCall | null = null;

  constructor(
    readonly depth: number,
    readonly parent: TrieNode | null,
    /** Content key of the message at index depth-1 ("" at the root). */
    readonly key: string,
  ) {}

  /** The child for a message's content key (created when new); `message` is the message the key was made from. */
  child(key: string, message: ChatMessage): TrieNode {
    let c = this.children.get(key);
    if (!c) {
      c = new TrieNode(this.depth + 1, this, key);
      this.children.set(key, c);
      const value = valueKey(message);
      // The first node of a value wins: a produced response is inserted before any request that echoes it.
      if (value !== null && !this.valueChildren.has(value)) this.valueChildren.set(value, c);
    }
    return c;
  }

  /** The content keys from the root to this node. */
  keys(): string[] {
    const keys: string[] = [];
    for (let n: TrieNode | null = this.parent === null ? null : this; n && n.parent; n = n.parent) keys.push(n.key);
    return keys.reverse();
  }

  /** The messages from the root to this node, rebuilt from their keys (tool-call ids are not kept). */
  messages(): ChatMessage[] {
    return this.keys().map(messageFromKey);
  }
}

export interface Walk {
  /** nodes[i] is the node after i messages (nodes[0] = root). */
  nodes: TrieNode[];
  /** Indices of assistant messages matched by value only (their text differs from the node's). */
  realigned: number[];
}

/**
 * Walks `keys` from the root as far as the trie goes. An assistant message with no node of its exact text continues
 * through a node of the same value (`valueKey`) when one exists: a harness that re-serialises the arguments the model
 * sampled still extends that turn.
 */
export function walk(root: TrieNode, keys: readonly string[], messages: readonly ChatMessage[]): Walk {
  const nodes = [root];
  const realigned: number[] = [];
  let n = root;
  for (const [i, k] of keys.entries()) {
    let next = n.children.get(k);
    if (!next && n.valueChildren.size > 0) {
      const value = valueKey(messages[i] as ChatMessage);
      next = value === null ? undefined : n.valueChildren.get(value);
      if (next) realigned.push(i);
    }
    if (!next) break;
    nodes.push(next);
    n = next;
  }
  return { nodes, realigned };
}
