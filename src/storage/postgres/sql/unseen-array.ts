/**
 * How an array parameter is kept out of the planner's sight, for the two statements whose plans
 * depend on it (the enqueue's INSERT and the fair claim with kind limits). Pure text, no I/O.
 */

/**
 * An array parameter of a prepared statement, out of the planner's sight: `(SELECT $n)`, which it
 * plans as a value known only when the statement runs. PostgreSQL plans a prepared statement with
 * its values for its first five runs, then keeps a generic plan if that costs no more than those
 * did. Seeing an array, it counts its elements (one, for one job); not seeing one, it assumes a
 * default. A statement over small arrays therefore always looked cheaper planned afresh and was
 * planned on every run: the enqueue's INSERT and the fair claim with kind limits (bench/RESULTS.md,
 * "PostgreSQL through the server: a result without a read, plans kept"). With one of its arrays unseen, a statement over several (`unnest(a, b)`
 * counts the longest) is costed alike either way, and the generic plan is kept.
 */
export function unseenArray(param: string): string {
  return `(SELECT ${param})`;
}
