# syntax=docker/dockerfile:1
#
# The umstore commands (umstored, umpub, umrcv) in a minimal image:
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t umstore .
#   docker run --rm umstore --version
#
# docs/operations.md explains how to run the stores from it.

# The builder's Go must be the version go.mod asks for (its "go 1.26" line):
# change both together. cmd/umstored/packaging_test.go fails when they differ.
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a change to the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0 makes static binaries, which the scratch image needs: it has
# no C library and no dynamic loader. -trimpath keeps the build machine's
# paths out of the binaries; -s -w drops the symbol tables.
RUN CGO_ENABLED=0 go build -trimpath \
        -ldflags "-s -w -X umstore/internal/version.Version=${VERSION}" \
        -o /out/bin/ ./cmd/umstored ./cmd/umpub ./cmd/umrcv \
    && mkdir -p /out/data

FROM scratch
COPY --from=build /out/bin/ /usr/local/bin/
# The data directory belongs to the user the stores run as, so that a new
# named volume mounted there is writable. A bind-mounted host directory must
# be given to that user: chown 65532:65532 DIR.
COPY --from=build --chown=65532:65532 /out/data /var/lib/umstore
USER 65532:65532
VOLUME /var/lib/umstore
# Which ports the stores use comes from the deployment file: store n of group
# g listens on raft port BASE+10*g+n and client port BASE+1000+10*g+n, so two
# groups of three with the default base 14000 use 14011-14023 and
# 15011-15023; the status page is on --admin-addr (9100 in the examples).
# The stores listen on their host's address from the deployment file, so
# run the container with --network host; these lines only document the
# defaults.
EXPOSE 14011-14023 15011-15023 9100
ENTRYPOINT ["/usr/local/bin/umstored"]
CMD ["--help"]
