// A collapse's progress writes (Preparing, Authorized), held while the collapse is quick.
//
// On a node of two cores the API server, etcd, the controller and every watcher run beside the agent:
// each status write is a server-side apply and a round of watch events taken out of the ~50 ms a small
// collapse needs. So a collapse keeps its progress statuses here and writes only the latest of them, once
// `holdMs` passed; a collapse that finishes sooner drops them, and its final status is its one write.
// Nothing is held from the store: the transaction row records every step when it happens, and a restart
// settles from the row, never from the API's status. The hold is 0 when something outside the agent acts
// on a progress status (the controller's grant answers an Authorized one): every note is written at once.

export class ProgressHold<S> {
  private kept: S | undefined;
  private holding: boolean;
  private readonly timer: NodeJS.Timeout | undefined;
  /** The write under way (released progress, in order); end() waits for it. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (s: S) => Promise<void>,
    holdMs: number,
    private readonly failed: (e: Error) => void,
  ) {
    this.holding = holdMs > 0;
    this.timer = this.holding ? setTimeout(() => void this.release(), holdMs) : undefined;
  }

  /** A progress status: kept (the latest only) while held, else written after the ones before it. */
  note(s: S): Promise<void> {
    if (this.holding) {
      this.kept = s;
      return Promise.resolve();
    }
    const next = this.writing.then(() => this.write(s));
    this.writing = next.catch(() => undefined);
    return next;
  }

  /** Stops holding: the kept status is written now (a failure is reported, not thrown), later notes as they come. */
  release(): Promise<void> {
    if (!this.holding) return this.writing;
    this.holding = false;
    clearTimeout(this.timer);
    const s = this.kept;
    this.kept = undefined;
    if (s !== undefined) this.writing = this.writing.then(() => this.write(s)).catch((e: unknown) => this.failed(e as Error));
    return this.writing;
  }

  /** The final status supersedes what is kept: dropped, and any write under way is waited for. */
  end(): Promise<void> {
    this.holding = false;
    clearTimeout(this.timer);
    this.kept = undefined;
    return this.writing;
  }
}
