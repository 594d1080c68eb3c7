//go:build !wasip1

package sdk

import "embed"

// Source is this SDK's own source (Go packages and openhuman.h, tests included,
// and the Rust and AssemblyScript SDKs in rust/ and assemblyscript/),
// built into the host binary so that `openhuman-core tools new` can give a new
// tool the SDK the host speaks, offline: the Go module proxy does not serve this
// module. Not part of wasip1 builds, so guests do not carry it.
//
//go:embed *.go abi/*.go memory/*.go searxng/*.go openhuman.h rust/Cargo.toml rust/src/*.rs assemblyscript/package.json assemblyscript/assembly/*.ts
var Source embed.FS
