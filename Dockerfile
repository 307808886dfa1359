# The syncer image: a static binary on distroless, non-root. The binary is built by
# hack/build-static.sh, the same script `make image-check` runs without a container engine.
# Build: docker build -t <registry>/kubestellar-syncer:<tag> .   (or: make image-docker IMAGE=...;
# `make image` builds the same image without Docker: hack/build-image.sh)
# Go as go.mod's `go` line says (the golang image builds with GOTOOLCHAIN=local); `make image-check`
# fails when the two differ.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN hack/build-static.sh /out/syncer

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/syncer /syncer
USER 65532:65532
EXPOSE 8443 8081
ENTRYPOINT ["/syncer"]
