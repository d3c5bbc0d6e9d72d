import { z } from "zod";

export const createTokenBody = z.object({ name: z.string().optional() });
