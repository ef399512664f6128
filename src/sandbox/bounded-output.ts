/**
 * Keeps at most `limit` bytes of a stream: the first half and the last half, because a harness's startup banner and
 * its final error are both worth more than the middle. Memory stays bounded whatever the command writes.
 */
export class BoundedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  total = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const headCap = Math.ceil(this.limit / 2);
    if (this.headBytes < headCap) {
      const take = Math.min(headCap - this.headBytes, chunk.length);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    const tailCap = this.limit - headCap;
    if (tailCap <= 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    if (this.tailBytes > 2 * tailCap) this.compactTail(tailCap);
  }

  get truncated(): boolean {
    return this.total > this.limit;
  }

  text(): string {
    const tailCap = this.limit - Math.ceil(this.limit / 2);
    this.compactTail(tailCap);
    const head = Buffer.concat(this.head).toString("utf8");
    const tail = Buffer.concat(this.tail).toString("utf8");
    if (!this.truncated) return head + tail;
    const omitted = this.total - this.headBytes - this.tailBytes;
    return `${head}\n…[${omitted} bytes omitted]…\n${tail}`;
  }

  private compactTail(cap: number): void {
    if (this.tailBytes <= cap) return;
    const all = Buffer.concat(this.tail);
    const kept = all.subarray(all.length - cap);
    this.tail = [Buffer.from(kept)];
    this.tailBytes = kept.length;
  }
}
