// Validation helpers shared by every operation's schema.
import { z } from "zod";
import { validationFailure } from "../errors.ts";

export function parse<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationFailure(result.error.issues);
  return result.data;
}

/** A query boolean as the real service takes it: the strings "true" or "false". */
export const queryBoolean = (fallback: "true" | "false") =>
  z
    .enum(["true", "false"])
    .default(fallback)
    .transform((value) => value === "true");

/** uuid as the real service checks it (8-4-4-4-12 hex, any version). */
export const uuid = () => z.guid();

export const dateTime = () => z.iso.datetime({ offset: true });
