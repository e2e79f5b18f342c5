/** Job states between the engine's numbering (the key's state byte) and the wire enum, in both directions. */
import { JobState as CoreState } from '../core/types.ts';
import { JobState } from '../gen/telha/v1/queue_pb.ts';

const TO_WIRE: Readonly<Record<CoreState, JobState>> = {
  [CoreState.Pending]: JobState.PENDING,
  [CoreState.Leased]: JobState.LEASED,
  [CoreState.Completed]: JobState.COMPLETED,
  [CoreState.Failed]: JobState.FAILED,
  [CoreState.Dead]: JobState.DEAD,
  [CoreState.Cancelled]: JobState.CANCELLED,
};

const FROM_WIRE: ReadonlyMap<JobState, CoreState> = new Map(
  Object.entries(TO_WIRE).map(([core, wire]) => [wire, Number(core) as CoreState]),
);

export function stateToWire(state: CoreState): JobState {
  return TO_WIRE[state];
}

/** The engine state of a wire state; `null` for UNSPECIFIED or a value this build does not know. */
export function stateFromWire(state: JobState): CoreState | null {
  return FROM_WIRE.get(state) ?? null;
}
