# vplayer and its load generator as static binaries on an empty base image.
#
#   docker build -t vplayer .
#   docker run --rm vplayer run --help
#
# The build stage's Go must be at least the go directive of go.mod; a newer patch release is
# fetched by the toolchain when needed.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w" -o /out/vplayer ./cmd/vplayer && \
    go build -trimpath -ldflags="-s -w" -o /out/vplayer-load ./cmd/vplayer-load

FROM scratch
# Root certificates, for --source-tls-mode / --target-tls-mode verify-ca and verify-identity
# without a CA file.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/vplayer /out/vplayer-load /usr/local/bin/
USER 65532:65532
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/vplayer"]
