/**
 * The lane of an account's next first attempt, of its two (`lanesOf`): its own, unless this
 * worker holds at least half a lane's prefetch from it and fewer from the second. A lane whose
 * jobs leave as fast as they come holds few; one that holds many has a backlog, most often of
 * another account whose receivers hang (its jobs wait in the worker for their subscription),
 * and an account that shares it waits behind that backlog unless it takes its second lane.
 * Every worker reads every lane, so what one worker holds from a lane is what all of them see.
 */
export function chooseLane(
  [own, second]: readonly [number, number],
  held: (lane: number) => number,
  prefetch: number,
): number {
  const ownHeld = held(own);
  return ownHeld >= prefetch / 2 && held(second) < ownHeld ? second : own;
}
