# taskflow's one image for every role: api, worker, scheduler, orchestrator,
# service NAME, mcp, dev (the command is the role: `docker run IMAGE worker`).
# A static binary on an empty base, run as a non-root user.
#
#   make image                       # compiles in GO_IMAGE (needs that image)
#   make image BINARY=prebuilt       # packs bin/linux/ that the host built
#
# Build arguments:
#   GO_IMAGE      the Go toolchain image of the compile stage
#   RUNTIME_BASE  the runtime stage's base (default: an empty image)
#   BINARY        compile (build inside GO_IMAGE) or prebuilt (copy
#                 bin/linux/taskflow, bin/linux/rankd and
#                 bin/linux/ca-certificates.crt from the build context)
#   COMMIT        the commit `taskflow version` reports
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_BASE=scratch
ARG BINARY=compile

FROM ${GO_IMAGE} AS compile
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN mkdir -p /out/data/output /out/data/artifacts && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/taskflow/taskflow/internal/platform/version.commit=${COMMIT}" \
      -o /out/ ./cmd/taskflow ./cmd/rankd && \
    cp /etc/ssl/certs/ca-certificates.crt /out/

FROM scratch AS prebuilt
COPY bin/linux/taskflow bin/linux/rankd bin/linux/ca-certificates.crt /out/
COPY bin/linux/data /out/data

FROM ${BINARY} AS binary

FROM ${RUNTIME_BASE}
COPY --from=binary /out/taskflow /out/rankd /usr/local/bin/
COPY --from=binary /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# output files of `taskflow service` and the shared artifact directory;
# mount a volume here
COPY --from=binary --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
ENV TASKFLOW_ADDR=:8080 \
    TASKFLOW_OUTPUT_DIR=/data/output \
    LOG_FORMAT=json
EXPOSE 8080
# no HEALTHCHECK here: only the api and dev roles serve HTTP; compose.yaml
# and the Helm chart probe those with `taskflow healthcheck` (/live, /ready)
ENTRYPOINT ["/usr/local/bin/taskflow"]
CMD ["api"]
