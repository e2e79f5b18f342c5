/** How many calls of a kind the server holds at once, overall or per principal. */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { principalLabel, type Principal } from '../edge/auth.ts';

/** Calls of one kind held at once, up to a configured limit. */
export class CallBudget {
  private held = 0;

  constructor(
    private readonly limit: number,
    private readonly what: string,
    private readonly key: string,
  ) {}

  /** Calls admitted and not yet released. */
  get open(): number {
    return this.held;
  }

  /** Count one more call; RESOURCE_EXHAUSTED, naming the budget's key, over the limit. Returns its release. */
  admit(): () => void {
    if (this.held >= this.limit) {
      throw new TelhaError(ErrorCode.ResourceExhausted, `over ${this.limit} ${this.what} (${this.key}); retry later`);
    }
    this.held++;
    let released = false;
    return () => {
      if (!released) this.held--;
      released = true;
    };
  }
}

/** A `CallBudget` for each principal (each token), made at its first call and dropped after its last. */
export class BudgetPerPrincipal {
  private readonly budgets = new Map<Principal, CallBudget>();

  constructor(
    private readonly limit: number,
    private readonly what: string,
    private readonly key: string,
  ) {}

  /** Count one more call of `principal`'s; RESOURCE_EXHAUSTED, naming it and the key, over the limit. Returns its release. */
  admit(principal: Principal): () => void {
    let budget = this.budgets.get(principal);
    if (budget === undefined) {
      budget = new CallBudget(this.limit, `${this.what} for ${principalLabel(principal)}`, this.key);
      this.budgets.set(principal, budget);
    }
    const own = budget;
    const release = own.admit();
    return () => {
      release();
      if (own.open === 0 && this.budgets.get(principal) === own) this.budgets.delete(principal);
    };
  }
}
