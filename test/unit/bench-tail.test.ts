// The tail tool's reading of one run: which slow requests meet a major GC window, how much of the
// run those windows cover, and how the slow requests bunch into 100 ms bins.
import { describe, expect, it } from 'vitest';
import { analyseRun } from '../../bench/tools/tail.ts';

const T = 1_800_000_000_000_000; // a Unix time in µs
const ms = (x: number) => x * 1000;

/** 1,000 requests 1 ms apart answered in 0.5 ms, and slow ones (20 ms) sent at `slowAt` ms. */
function run(slowAt: number[]): [number, number][] {
  const requests: [number, number][] = [];
  for (let i = 0; i < 1000; i++) if (!slowAt.includes(i)) requests.push([T + ms(i), 500]);
  for (const at of slowAt) requests.push([T + ms(at), ms(20)]);
  return requests;
}

describe('tail analysis', () => {
  const slowAt = [250, 255, 260, 265, 270, 275, 800, 810, 900, 910];
  const pauses = [
    { startUs: T - ms(50), us: ms(9), kind: 4 }, // before the run: not counted
    { startUs: T + ms(100), us: ms(1), kind: 1 },
    { startUs: T + ms(600), us: ms(2), kind: 1 },
    { startUs: T + ms(700), us: ms(3), kind: 1 },
    { startUs: T + ms(500), us: ms(5), kind: 4 }, // its window: 200-505 ms
  ];

  it('counts the slow requests meeting a major GC window against the time the window covers', () => {
    const r = analyseRun(run(slowAt), pauses, ms(20));
    expect(r.slow).toBe(10);
    // The six sent at 250-275 ms run until 270-295 ms, inside 200-505 ms; 800-910 ms are not.
    expect(r.slowInMajorPct).toBe(60);
    // 305 ms of a run from 0 to 999.5 ms.
    expect(r.majorTimePct).toBe(30.5);
    expect(r.majorPauses).toBe(1);
    expect(r.majorMaxMs).toBe(5);
    expect(r.minorPauses).toBe(3);
    expect(r.minorMeanMs).toBe(2);
    expect(r.minorMaxMs).toBe(3);
  });

  it('finds the bins the slow requests bunch into', () => {
    const r = analyseRun(run(slowAt), pauses, ms(20));
    expect(r.bins).toBe(10);
    expect(r.slowBins).toBe(3);
    expect(r.top3BinsPct).toBe(100);
    const spread = analyseRun(run([50, 150, 250, 350, 450]), [], ms(20));
    expect(spread.slowBins).toBe(5);
    expect(spread.top3BinsPct).toBe(60);
    expect(spread.slowInMajorPct).toBe(0);
    expect(spread.majorTimePct).toBe(0);
  });

  it('counts a window once where two overlap, and a slow request that only ends in one', () => {
    const twoPauses = [
      { startUs: T + ms(500), us: ms(5), kind: 4 },
      { startUs: T + ms(600), us: ms(5), kind: 2 }, // window 300-605 ms overlaps the first
    ];
    const r = analyseRun(run([190]), twoPauses, ms(20)); // sent at 190 ms, answered at 210 ms
    expect(r.majorTimePct).toBe(40.5); // 200-605 ms once
    expect(r.slowInMajorPct).toBe(100);
  });
});
