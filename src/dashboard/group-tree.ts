/** A node of a GRPO group's prefix tree: a run of tokens every rollout below it shares. */
export interface GroupTreeNode {
  /** Position of the run's first token in the trajectories. */
  start: number;
  tokens: number;
  /** Rollouts whose trajectory passes through this node. */
  rollouts: string[];
  /** Mean reward of those rollouts. */
  meanReward: number;
  /** Rollouts whose trajectory ends here (leaves), with their reward. */
  ends: { rolloutId: string; reward: number }[];
  children: GroupTreeNode[];
}

export interface GroupMember {
  rolloutId: string;
  reward: number;
  /** The rollout's trajectory: its main session's last call, prompt and completion. */
  tokens: readonly number[];
}

/** Most nodes built (a group of k rollouts has fewer than 2k; the bound guards malformed input). */
const MAX_NODES = 4096;

/**
 * The compressed prefix tree of a group's trajectories: the shared prefix at the root, a branch point wherever two
 * trajectories first differ, each node with the mean reward below it. What the group's advantages are relative to.
 */
export function groupTree(members: readonly GroupMember[]): GroupTreeNode | null {
  if (members.length === 0) return null;
  let budget = MAX_NODES;
  const build = (group: readonly GroupMember[], start: number): GroupTreeNode => {
    budget--;
    const first = group[0] as GroupMember;
    let end = start;
    // The longest run from `start` all members share.
    while (end < first.tokens.length && group.every((m) => m.tokens.length > end && m.tokens[end] === first.tokens[end])) end++;
    const ends = group.filter((m) => m.tokens.length === end).map((m) => ({ rolloutId: m.rolloutId, reward: m.reward }));
    const byNext = new Map<number, GroupMember[]>();
    for (const m of group) {
      const t = m.tokens[end];
      if (t === undefined) continue;
      const list = byNext.get(t) ?? [];
      list.push(m);
      byNext.set(t, list);
    }
    const children = budget > 0 ? [...byNext.values()].map((g) => build(g, end)) : [];
    return {
      start,
      tokens: end - start,
      rollouts: group.map((m) => m.rolloutId),
      meanReward: group.reduce((s, m) => s + m.reward, 0) / group.length,
      ends,
      children,
    };
  };
  return build(members, 0);
}
