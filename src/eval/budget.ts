/**
 * `--max-cost`: a paid run stops before it would pass its budget. Before an arm plays a
 * conversation, its cost is projected from the conversation's token counts (generously:
 * every request carries what the arm could carry, nothing cached); before each turn, what
 * was spent plus a projection of that turn must still fit. Whatever stops the run is said
 * with the figures.
 */
import type { TokenCounter } from '../tokens/tokens.js';
import { SUMMARISE_AT, type ArmName } from './arms.js';
import { costOf, type Price } from './prices.js';
import type { Conversation } from './suite.js';

/** Tokens assumed for an answer, the instructions and tools, and a fetched document, when projecting. */
const ANSWER_TOKENS = 250;
const BASE_TOKENS = 2_500;
const DOCUMENT_TOKENS = 3_500;
/** Requests a turn is projected to make (tool calls, memory writes). */
const REQUESTS_PER_TURN = 1.6;

/** The budget was reached: nothing more is started. */
export class BudgetStop extends Error {
  override name = 'BudgetStop';
}

/** The dollars `arm` is projected to spend on `conversation` at most (about). */
export function projectedCost(
  conversation: Conversation,
  arm: ArmName,
  contextWindow: number,
  counter: TokenCounter,
  price: Price,
): number {
  const cap = arm === 'full-history' ? Infinity : (arm === 'summarise-75' ? SUMMARISE_AT : 0.75) * contextWindow;
  let carried = BASE_TOKENS;
  let input = 0;
  for (const turn of conversation.turns) {
    carried += counter.text(turn.text) + ANSWER_TOKENS + (/fetch_document/.test(turn.text) ? DOCUMENT_TOKENS : 0);
    input += Math.min(carried, cap) * REQUESTS_PER_TURN;
  }
  return costOf(price, input, 0, conversation.turns.length * ANSWER_TOKENS * REQUESTS_PER_TURN);
}

/** The spending of one invocation against its budget. */
export class Budget {
  spent = 0;
  constructor(
    readonly max: number | null,
    readonly price: Price | null,
  ) {}

  /** Throws BudgetStop when `next` more dollars would pass the budget; `what` says what would have run. */
  check(next: number, what: string, spentNow = this.spent): void {
    if (this.max === null) return;
    if (spentNow + next > this.max)
      throw new BudgetStop(
        `stopped before ${what}: $${spentNow.toFixed(4)} spent of the $${this.max} budget, and it is projected to cost up to $${next.toFixed(4)} more`,
      );
  }

  /** A projection of one more turn after a request that carried `lastInput` tokens. */
  turnCost(lastInput: number, turnText: string, counter: TokenCounter): number {
    if (!this.price) return 0;
    const input = (Math.max(lastInput, BASE_TOKENS) + counter.text(turnText) + DOCUMENT_TOKENS) * REQUESTS_PER_TURN * 2;
    return costOf(this.price, input, 0, ANSWER_TOKENS * REQUESTS_PER_TURN * 2);
  }
}
