/**
 * The object the Node reliability tests serve through the real dispatcher: counts every run of
 * every method (so a replay would show) and can hold calls open until the test releases them.
 */
export class Service {
  /** Runs per method name. */
  readonly runs = new Map<string, number>();
  value = 0;
  /** Calls parked by `hold`, oldest first: release with `release()`. */
  readonly gates: { tag: string; resolve: (value: string) => void }[] = [];

  private count(name: string): void {
    this.runs.set(name, (this.runs.get(name) ?? 0) + 1);
  }

  runsOf(name: string): number {
    return this.runs.get(name) ?? 0;
  }

  increment(by = 1): number {
    this.count("increment");
    this.value += by;
    return this.value;
  }

  /** Replies only when released by the test. */
  hold(tag: string): Promise<string> {
    this.count(`hold:${tag}`);
    return new Promise((resolve) => this.gates.push({ tag, resolve }));
  }

  echo<T>(value: T): T {
    this.count("echo");
    return value;
  }

  /** Releases every parked call (their replies go to whatever connection they came from). */
  releaseAll(): void {
    for (const gate of this.gates.splice(0)) gate.resolve(gate.tag);
  }
}
