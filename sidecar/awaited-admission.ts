// The front door of requests whose verdict is awaited as a promise: upgrades and the decision
// service's checks. It runs the admission pipeline (pipeline.ts) and resolves with the verdict,
// whether the steps gave it at once or the store answered later.
import type { Socket } from 'node:net';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import type { Admission } from './admission.ts';
import { AdmissionRequest, run, type FrontDoor } from './pipeline.ts';
import type { RouteRuntime } from './route-runtime.ts';
import { failedVerdict, takenVerdict } from './take-verdict.ts';
import { PENDING, type AdmissionHead, type Verdict } from './verdict.ts';

export class AwaitedAdmission implements FrontDoor {
  /** The request as the steps left it (its canonical target, once admitted). */
  readonly request: AdmissionRequest;
  #resolve: (v: Verdict) => void = () => undefined;
  #reject: (err: unknown) => void = () => undefined;

  constructor(admission: Admission, rt: RouteRuntime, socket: Socket | undefined) {
    this.request = new AdmissionRequest(admission, rt, socket, this);
  }

  admit(method: string, target: string, head: AdmissionHead): Promise<Verdict> {
    // The executor runs at once: a store answering during run() resolves it.
    return new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      const verdict = run(this.request, method, target, head);
      if (verdict !== PENDING) resolve(verdict);
    });
  }

  taken(decision: Decision): void {
    this.#resolve(takenVerdict(this.request, decision));
  }

  failed(err: Error): void {
    this.#resolve(failedVerdict(this.request, err));
  }

  settle(verdict: Verdict): void {
    this.#resolve(verdict);
  }

  fault(err: unknown): void {
    this.#reject(err);
  }
}
