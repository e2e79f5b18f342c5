/** Job states (and a listing's order, and a supersede mode) between the engine's names and the wire enums, in both directions. */
import { invalidArgument } from '../core/errors.ts';
import type { ListOrder } from '../core/list-order.ts';
import { JobState, type OrderDeadPolicy, type SupersedeMode } from '../core/types.ts';
import {
  JobState as WireJobState,
  ListOrder as WireListOrder,
  SupersedeMode as WireSupersedeMode,
  OrderDeadPolicy as WireOrderDeadPolicy,
} from '../gen/telha/v1/queue_pb.ts';

const TO_WIRE: Readonly<Record<JobState, WireJobState>> = {
  [JobState.Pending]: WireJobState.PENDING,
  [JobState.Leased]: WireJobState.LEASED,
  [JobState.Completed]: WireJobState.COMPLETED,
  [JobState.Failed]: WireJobState.FAILED,
  [JobState.Dead]: WireJobState.DEAD,
  [JobState.Cancelled]: WireJobState.CANCELLED,
};

const FROM_WIRE: ReadonlyMap<WireJobState, JobState> = new Map(
  Object.entries(TO_WIRE).map(([core, wire]) => [wire, Number(core) as JobState]),
);

export function stateToWire(state: JobState): WireJobState {
  return TO_WIRE[state];
}

/** The engine state of a wire state; `null` for UNSPECIFIED or a value this build does not know. */
export function stateFromWire(state: WireJobState): JobState | null {
  return FROM_WIRE.get(state) ?? null;
}

/** A listing's order on the wire; the engine's default (`newest_first`) travels as UNSPECIFIED. */
export function listOrderToWire(order: ListOrder | undefined): WireListOrder {
  if (order === undefined) return WireListOrder.UNSPECIFIED;
  return order === 'oldest_first' ? WireListOrder.OLDEST_FIRST : WireListOrder.NEWEST_FIRST;
}

/** The engine's order of a wire one: UNSPECIFIED is newest first; a value this build does not know is `invalid_argument`. */
export function listOrderFromWire(order: WireListOrder): ListOrder {
  switch (order) {
    case WireListOrder.UNSPECIFIED:
    case WireListOrder.NEWEST_FIRST:
      return 'newest_first';
    case WireListOrder.OLDEST_FIRST:
      return 'oldest_first';
    default:
      throw invalidArgument('order', `unknown order ${String(order)}`);
  }
}

/** A supersede mode on the wire; left out, UNSPECIFIED (which the server reads as `pending`). */
export function supersedeModeToWire(mode: SupersedeMode | undefined): WireSupersedeMode {
  if (mode === undefined) return WireSupersedeMode.UNSPECIFIED;
  return mode === 'leased' ? WireSupersedeMode.LEASED : WireSupersedeMode.PENDING;
}

/** The engine's mode of a wire one: `undefined` for UNSPECIFIED; a value this build does not know is `invalid_argument`. */
export function supersedeModeFromWire(mode: WireSupersedeMode, field: string): SupersedeMode | undefined {
  switch (mode) {
    case WireSupersedeMode.UNSPECIFIED:
      return undefined;
    case WireSupersedeMode.PENDING:
      return 'pending';
    case WireSupersedeMode.LEASED:
      return 'leased';
    default:
      throw invalidArgument(field, `unknown supersede mode ${String(mode)}`);
  }
}

/** An ordered key's dead policy on the wire; left out, UNSPECIFIED (which the server reads as `block`). */
export function orderDeadPolicyToWire(policy: OrderDeadPolicy | undefined): WireOrderDeadPolicy {
  if (policy === undefined) return WireOrderDeadPolicy.UNSPECIFIED;
  return policy === 'release' ? WireOrderDeadPolicy.RELEASE : WireOrderDeadPolicy.BLOCK;
}

/** The engine's policy of a wire one: `undefined` for UNSPECIFIED; a value this build does not know is `invalid_argument`. */
export function orderDeadPolicyFromWire(policy: WireOrderDeadPolicy, field: string): OrderDeadPolicy | undefined {
  switch (policy) {
    case WireOrderDeadPolicy.UNSPECIFIED:
      return undefined;
    case WireOrderDeadPolicy.BLOCK:
      return 'block';
    case WireOrderDeadPolicy.RELEASE:
      return 'release';
    default:
      throw invalidArgument(field, `unknown order dead policy ${String(policy)}`);
  }
}
