# antidrift as a container image: `make image`, or
#   docker build -t antidrift:0.1.0 .
# Two stages: the toolchain builds one static binary (no cgo, no libc), and
# the image holds only that binary, CA certificates for HTTPS endpoints, and
# a non-root user. Manifests (antidrift manifests k8s) run it as
# `antidrift rollout|merge ...` with the run folder on a mounted volume.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
RUN go build -ldflags='-s -w' -o /out/antidrift ./cmd/antidrift \
 && /out/antidrift --help > /dev/null

# distroless static: no shell, no package manager; uid/gid 65532 "nonroot".
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/antidrift /usr/local/bin/antidrift
USER 65532:65532
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/antidrift"]
CMD ["--help"]
