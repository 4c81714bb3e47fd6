/**
 * Change notifications: a key was revoked or an account (plan, limits, credits) changed, so every replica
 * drops its cached copy. `publish` runs this process's handlers before it resolves, so the replica that made
 * the change is consistent at once; other replicas hear it through the bus. Handlers must tolerate a change
 * heard twice or not at all: the caches' 1 s TTL and refresh stay the backstop.
 */
export interface Change {
  accountId?: string;
  keyId?: string;
}

export type ChangeHandler = (change: Change) => void | Promise<void>;

export interface ChangeBus {
  /** Never throws: failures go to the bus's `onError`. */
  publish(change: Change): Promise<void>;
  subscribe(handler: ChangeHandler): void;
  close(): Promise<void>;
}

/** Runs each handler in turn; a failing handler does not stop the others. */
export async function dispatch(
  handlers: readonly ChangeHandler[],
  change: Change,
  onError: (error: unknown) => void,
): Promise<void> {
  for (const handler of handlers) {
    try {
      await handler(change);
    } catch (error) {
      onError(error);
    }
  }
}

/** One process: publish calls the handlers directly. */
export class LocalChangeBus implements ChangeBus {
  private readonly handlers: ChangeHandler[] = [];

  constructor(private readonly onError: (error: unknown) => void = () => {}) {}

  publish(change: Change): Promise<void> {
    return dispatch(this.handlers, change, this.onError);
  }

  subscribe(handler: ChangeHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {}
}
