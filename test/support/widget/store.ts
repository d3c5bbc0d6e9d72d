// The Widget kind's external system: a small in-process widget store. A Map of widgets with an id
// counter assigned on create, no uniqueness of names (as many real services: only keyward's
// create-pending guard keeps a lost answer from becoming a second widget), and a log of every
// call so a test can count them. It can be told to fail calls with a classified error, to fail
// after the call took effect (a lost answer), and to keep a widget "painting" for a few reads
// after its color changed (the kind's progress reason).
//
// This is the test kind's own backend, not a mock of keyward's service client: the kind's
// ManagedModule (kind.ts) talks to it the way a real kind talks to its service.
import { classification, reasonForStatus, type Classification, type ClassifiedError } from "../../../src/lib/classified.ts";

export const widgetColors = ["red", "green", "blue", "gold"] as const;
export type WidgetColor = (typeof widgetColors)[number];

export type WidgetOp = "get" | "find" | "create" | "update" | "delete";

/** A widget as the store answers it (a copy: changing it changes nothing in the store). */
export interface StoredWidget {
  id: string;
  /** The widget's name in the store: "<namespace>/<name>" of the resource that made it. */
  name: string;
  size: number;
  color: WidgetColor;
  /** Being repainted after a color change: not usable yet. */
  painting: boolean;
}

export interface WidgetCall {
  op: WidgetOp;
  /** The widget's name (for an id, the name of the widget that id was given to), else the id asked for. */
  name: string;
  /** ok: answered; failed: refused or unanswered, nothing changed; lost: took effect, the answer was lost. */
  result: "ok" | "failed" | "lost";
}

/** An error of the store, classified the way keyward's own clients classify an HTTP status. */
export class WidgetStoreError extends Error implements ClassifiedError {
  /** The HTTP-like status; undefined when no answer came (a timeout). */
  readonly status: number | undefined;
  readonly mayHaveLanded: boolean;

  constructor(status: number | undefined, message: string) {
    super(message);
    this.name = "WidgetStoreError";
    this.status = status;
    // As for keyward's service client: no answer or a 5xx may have changed something; a 4xx did not.
    this.mayHaveLanded = status === undefined || status >= 500;
  }

  classify(): Classification {
    const status = this.status;
    if (status === undefined) return classification("ServiceUnavailable", this.message, true);
    const retryable = status >= 500 || status === 409 || status === 429;
    return classification(reasonForStatus(status), this.message, retryable);
  }
}

/** A store error with this status (503: retryable, may have landed; 4xx: refused, not retried). */
export function storeError(status: number, message = `the widget store answered ${status}`): WidgetStoreError {
  return new WidgetStoreError(status, message);
}

/** No answer from the store: retryable, and the call may have landed. */
export function noAnswer(message = "no answer from the widget store"): WidgetStoreError {
  return new WidgetStoreError(undefined, message);
}

export function isStoreNotFound(err: unknown): boolean {
  return err instanceof WidgetStoreError && err.status === 404;
}

interface Failure {
  left: number;
  error: WidgetStoreError;
  op: WidgetOp | undefined;
  name: string | undefined;
  /** The call takes effect, then the error is thrown (its answer is lost). */
  landed: boolean;
}

interface Widget {
  id: string;
  name: string;
  size: number;
  color: WidgetColor;
  /** Reads left that still see it painting. */
  paintingLeft: number;
}

export interface WidgetStoreOptions {
  /** How many reads see a widget painting after its color changed (default 1). */
  paintReads?: number;
}

export class WidgetStore {
  private readonly widgets = new Map<string, Widget>();
  /** Every id ever given, to the name it was given for (calls by id are counted under that name). */
  private readonly names = new Map<string, string>();
  private readonly failures: Failure[] = [];
  private readonly log: WidgetCall[] = [];
  private nextId = 1;
  private readonly paintReads: number;

  constructor(opts: WidgetStoreOptions = {}) {
    this.paintReads = opts.paintReads ?? 1;
  }

  async get(id: string): Promise<StoredWidget | undefined> {
    return this.call("get", this.names.get(id) ?? id, () => {
      const w = this.widgets.get(id);
      return w ? this.read(w) : undefined;
    });
  }

  /** The first widget with this name, if any. */
  async find(name: string): Promise<StoredWidget | undefined> {
    return this.call("find", name, () => {
      const w = [...this.widgets.values()].find((x) => x.name === name);
      return w ? this.read(w) : undefined;
    });
  }

  async create(input: { name: string; size: number; color: WidgetColor }): Promise<StoredWidget> {
    return this.call("create", input.name, () => {
      const id = `w-${String(this.nextId++)}`;
      const w: Widget = { id, name: input.name, size: input.size, color: input.color, paintingLeft: 0 };
      this.widgets.set(id, w);
      this.names.set(id, input.name);
      return snapshot(w);
    });
  }

  async update(id: string, change: { size: number; color: WidgetColor }): Promise<StoredWidget> {
    return this.call("update", this.names.get(id) ?? id, () => {
      const w = this.widgets.get(id);
      if (!w) throw storeError(404, `no widget ${id}`);
      if (w.color !== change.color) w.paintingLeft = this.paintReads;
      w.size = change.size;
      w.color = change.color;
      return snapshot(w);
    });
  }

  async delete(id: string): Promise<void> {
    return this.call("delete", this.names.get(id) ?? id, () => {
      if (!this.widgets.delete(id)) throw storeError(404, `no widget ${id}`);
    });
  }

  // ------------------------------------------------------------------ what tests do to it

  /**
   * The next `times` calls matching `where` (an operation, a widget name) throw `error`. With
   * `landed`, each call takes effect first and only its answer is lost.
   */
  failNext(times: number, error: WidgetStoreError, where: { op?: WidgetOp; name?: string; landed?: boolean } = {}): void {
    this.failures.push({ left: times, error, op: where.op, name: where.name, landed: where.landed ?? false });
  }

  /** The next matching create takes effect, and its caller gets no answer. */
  loseNextAnswer(where: { op?: WidgetOp; name?: string } = {}): void {
    this.failNext(1, noAnswer("the widget store took the call, but its answer was lost"), { ...where, landed: true });
  }

  /** Forgets every failure not yet used up. */
  recover(): void {
    this.failures.length = 0;
  }

  /** A widget someone else made (no call is logged). */
  seed(input: { name: string; size: number; color: WidgetColor }): StoredWidget {
    const id = `w-${String(this.nextId++)}`;
    const w: Widget = { id, name: input.name, size: input.size, color: input.color, paintingLeft: 0 };
    this.widgets.set(id, w);
    this.names.set(id, input.name);
    return snapshot(w);
  }

  /** The widgets with this name, as they are (no call is logged, nothing is painted). */
  named(name: string): StoredWidget[] {
    return [...this.widgets.values()].filter((w) => w.name === name).map(snapshot);
  }

  /** The calls so far, for one widget name and operation when given. */
  calls(where: { name?: string; op?: WidgetOp; result?: WidgetCall["result"] } = {}): WidgetCall[] {
    return this.log.filter(
      (c) =>
        (where.name === undefined || c.name === where.name) &&
        (where.op === undefined || c.op === where.op) &&
        (where.result === undefined || c.result === where.result),
    );
  }

  count(where: { name?: string; op?: WidgetOp; result?: WidgetCall["result"] } = {}): number {
    return this.calls(where).length;
  }

  // ------------------------------------------------------------------ inside

  private async call<T>(op: WidgetOp, name: string, run: () => T): Promise<T> {
    // An answer comes back later, as from any service.
    await new Promise((resolve) => setImmediate(resolve));
    const failure = this.failures.find(
      (f) => f.left > 0 && (f.op === undefined || f.op === op) && (f.name === undefined || f.name === name),
    );
    if (failure) {
      failure.left -= 1;
      if (failure.landed) {
        try {
          run();
        } catch (err) {
          this.log.push({ op, name, result: "failed" });
          throw err;
        }
      }
      this.log.push({ op, name, result: failure.landed ? "lost" : "failed" });
      throw failure.error;
    }
    try {
      const answer = run();
      this.log.push({ op, name, result: "ok" });
      return answer;
    } catch (err) {
      this.log.push({ op, name, result: "failed" });
      throw err;
    }
  }

  private read(w: Widget): StoredWidget {
    const answer = snapshot(w);
    if (w.paintingLeft > 0) w.paintingLeft -= 1;
    return answer;
  }
}

function snapshot(w: Widget): StoredWidget {
  return { id: w.id, name: w.name, size: w.size, color: w.color, painting: w.paintingLeft > 0 };
}
