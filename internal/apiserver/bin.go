package apiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BinDir is where kube-apiserver and etcd are looked for: $REWATCH_BIN_DIR,
// or .cache/bin in the repository (where scripts/build-apiserver.sh puts
// them).
func BinDir() string {
	if d := os.Getenv("REWATCH_BIN_DIR"); d != "" {
		return d
	}
	if root, err := repoRoot(); err == nil {
		return filepath.Join(root, ".cache", "bin")
	}
	return filepath.Join(".cache", "bin")
}

// repoRoot finds the repository from this source file (go test compiles
// with full paths), falling back to walking up from the working directory.
func repoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "build-apiserver.sh")); err == nil {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("repository root (with scripts/build-apiserver.sh) not found")
}

func haveBinaries(dir string) bool {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// EnsureBuilt builds the binaries into BinDir when they are missing, which
// takes minutes on a cold cache. Binaries that exist are used as they are,
// so a pre-built REWATCH_BIN_DIR works without the Go toolchain.
func EnsureBuilt(ctx context.Context) error {
	dir := BinDir()
	if haveBinaries(dir) {
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return fmt.Errorf("build kube-apiserver and etcd: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "build-apiserver.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "REWATCH_BIN_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/build-apiserver.sh: %w\n%s", err, tail(out, 40))
	}
	if !haveBinaries(dir) {
		return fmt.Errorf("scripts/build-apiserver.sh succeeded but %s lacks kube-apiserver or etcd", dir)
	}
	return nil
}
