/**
 * Batches whose items succeed or fail on their own (results a worker sends
 * together, enqueues gathered from concurrent callers): each item is checked
 * by itself, and an item that fails its check is answered with that error
 * while the rest go on together.
 */
import { itemFailed, type ItemResult } from '../core/types.ts';

/**
 * `prepare` each item (a throw becomes that item's answer), `apply` the
 * prepared ones in one go, and answer every item in its original order.
 */
export async function eachOnItsOwn<T, P, R>(
  items: readonly T[],
  prepare: (item: T, index: number) => P,
  apply: (prepared: readonly P[]) => Promise<readonly ItemResult<R>[]>,
): Promise<ItemResult<R>[]> {
  const results = new Array<ItemResult<R>>(items.length);
  const indexes: number[] = [];
  const prepared: P[] = [];
  for (const [index, item] of items.entries()) {
    try {
      prepared.push(prepare(item, index));
      indexes.push(index);
    } catch (error) {
      results[index] = itemFailed(error);
    }
  }
  if (prepared.length > 0) {
    const applied = await apply(prepared);
    applied.forEach((result, k) => {
      results[indexes[k] as number] = result;
    });
  }
  return results;
}
