/** Job states between the engine's numbering (the key's state byte) and the wire enum, in both directions. */
import { JobState } from '../core/types.ts';
import { JobState as WireJobState } from '../gen/telha/v1/queue_pb.ts';

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
