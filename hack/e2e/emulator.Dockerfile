# The service emulator (test/emulator) as an image for the e2e cluster: Node 24 runs its
# TypeScript directly (`node test/emulator/main.ts`); zod is its one dependency.
# Built by hack/e2e/images.sh from a staged context (package.json, test/emulator, node_modules/zod).
ARG RUNTIME_IMAGE=node:24-bookworm-slim
FROM ${RUNTIME_IMAGE}
WORKDIR /emulator
COPY . .
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "test/emulator/main.ts", "--host", "0.0.0.0", "--port", "8080"]
