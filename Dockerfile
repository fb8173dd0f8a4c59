# syntax=docker/dockerfile:1
# hush: a static binary on distroless, running as a non-root user.
# Build: docker build --build-arg VERSION=$(git describe --tags --always) -t hush:dev .
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz (see deploy/).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first, so source edits do not refetch modules.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/hush ./cmd/hush

FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/hush /usr/local/bin/hush
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hush"]
CMD ["serve"]
