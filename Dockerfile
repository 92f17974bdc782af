# The operator image for users who have Docker: the same contents as the image
# hack/imgpack packs without Docker for the local cluster (make images) — /manager as the
# entrypoint, the runner at /toolgate/runner (the init container of tool Pods copies it from
# here), the CLI at /toolgate/toolgate (the chart's MCP gateway runs it), user 65532, no shell, no libc.
#
#   docker build -t toolgate/manager:dev .
#
# Keep in step with hack/make/cluster.mk (images) and hack/imgpack.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/manager/ cmd/manager/
COPY cmd/runner/ cmd/runner/
COPY cmd/toolgate/ cmd/toolgate/
COPY controllers/ controllers/
COPY internal/ internal/
COPY pipeline/ pipeline/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/runner ./cmd/runner && \
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/toolgate ./cmd/toolgate

FROM scratch
COPY --from=build /out/manager /manager
COPY --from=build /out/runner /toolgate/runner
# The CLI, for the chart's MCP gateway (gateway.enabled: toolgate mcp --http).
COPY --from=build /out/toolgate /toolgate/toolgate
USER 65532:65532
ENTRYPOINT ["/manager"]
