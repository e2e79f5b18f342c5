/**
 * The protobuf integer types the wire carries numbers in, and the JS numbers each can carry.
 * protobuf-es refuses any other value only when a message is serialized ("invalid uint32: -1"),
 * which grpc-js reports as an INTERNAL failure of the call; the client and the CLI check here
 * first, so a bad number is bad input, named, and nothing is sent.
 */
import { checkIntegerInRange } from '../core/validate.ts';

/** Each integer type the requests use, with its range as JS numbers (64-bit ones: the safe integers). */
export const WIRE_INTEGERS = {
  uint32: { min: 0, max: 0xffff_ffff },
  int64: { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER },
  uint64: { min: 0, max: Number.MAX_SAFE_INTEGER },
} as const;
export type WireInteger = keyof typeof WIRE_INTEGERS;

/** `value`, when the wire can carry it as `type`; `invalid_argument` naming `field` otherwise. */
export function checkWireInteger(field: string, value: unknown, type: WireInteger): number {
  const { min, max } = WIRE_INTEGERS[type];
  return checkIntegerInRange(field, value, min, max);
}
