import { describe, expect, it } from "vitest";
import { notEstablished, waitForCrdsEstablished } from "../../controlplane/crds-established.ts";

const crd = (name: string, conditions: unknown): object => ({ metadata: { name }, status: conditions === undefined ? {} : { conditions } });

describe("notEstablished", () => {
  it("counts a CRD with no conditions yet, null conditions or Established False as waiting", () => {
    const list = {
      kind: "List",
      items: [
        crd("a.keyward.dev", undefined),
        crd("b.keyward.dev", null),
        crd("c.keyward.dev", [{ type: "Established", status: "False" }]),
        crd("d.keyward.dev", [
          { type: "NamesAccepted", status: "True" },
          { type: "Established", status: "True" },
        ]),
      ],
    };
    expect(notEstablished(JSON.stringify(list))).toEqual(["a.keyward.dev", "b.keyward.dev", "c.keyward.dev"]);
  });

  it("reads a single object as kubectl prints one", () => {
    expect(notEstablished(JSON.stringify(crd("d.keyward.dev", [{ type: "Established", status: "True" }])))).toEqual([]);
  });
});

describe("waitForCrdsEstablished", () => {
  it("keeps polling through a failed get and a CRD without conditions, and returns once Established", async () => {
    const answers: Array<() => string> = [
      () => {
        throw new Error("NotFound");
      },
      () => JSON.stringify(crd("a.keyward.dev", null)),
      () => JSON.stringify(crd("a.keyward.dev", [{ type: "Established", status: "True" }])),
    ];
    const calls: string[][] = [];
    await waitForCrdsEstablished(
      (args) => {
        calls.push(args);
        const next = answers.shift();
        if (!next) return Promise.reject(new Error("polled after Established"));
        try {
          return Promise.resolve(next());
        } catch (err) {
          return Promise.reject(err instanceof Error ? err : new Error(String(err)));
        }
      },
      ["crd/a.keyward.dev"],
      10_000,
    );
    expect(calls).toHaveLength(3);
    expect(calls[0]).toEqual(["get", "crd/a.keyward.dev", "-o", "json"]);
  });

  it("names what is still waiting when the deadline passes", async () => {
    await expect(
      waitForCrdsEstablished(() => Promise.resolve(JSON.stringify(crd("a.keyward.dev", null))), ["crd/a.keyward.dev"], 300),
    ).rejects.toThrow(/not Established: a\.keyward\.dev/);
  });
});
