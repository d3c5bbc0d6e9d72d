// Request schemas of the membership operations. The temporary-role form follows DESIGN.md:
// {role, isTemporary: true, temporaryMode: "relative", temporaryRange: ms-style, temporaryAccessStartTime}.
import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { dateTime } from "./parse.ts";

export const membershipDetailsParams = z.object({ projectId: z.string().min(1) });
export const membershipDetailsBody = z.object({ username: z.string().min(1) });

const roleItem = z
  .object({
    role: z.string(),
    isTemporary: z.boolean().default(false),
    temporaryMode: z.string().optional(),
    temporaryRange: z.string().optional(),
    temporaryAccessStartTime: z.string().optional(),
  })
  .superRefine((item, ctx) => {
    if (!item.isTemporary) return;
    if (item.temporaryMode !== "relative") {
      ctx.addIssue({ code: "custom", path: ["temporaryMode"], message: 'A temporary role needs temporaryMode "relative"' });
    }
    if (item.temporaryRange === undefined || parseDuration(item.temporaryRange) === undefined) {
      ctx.addIssue({ code: "custom", path: ["temporaryRange"], message: 'A temporary role needs an ms-style temporaryRange such as "1h"' });
    }
    if (!dateTime().safeParse(item.temporaryAccessStartTime).success) {
      ctx.addIssue({
        code: "custom",
        path: ["temporaryAccessStartTime"],
        message: "A temporary role needs an ISO date-time temporaryAccessStartTime",
      });
    }
  });

export type RoleItem = z.output<typeof roleItem>;

export const updateRolesBody = z.object({ roles: z.array(roleItem).min(1) });
