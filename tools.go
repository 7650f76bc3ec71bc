//go:build tools

// Package rewatch's tools.go pins dependencies that the packages under construction use,
// so that concurrent work on several packages does not race on go.mod.
package rewatch

import (
	_ "github.com/benbjohnson/clock"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/goccy/go-graphviz"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/qmuntal/stateless"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/apimachinery/pkg/api/errors"
	_ "k8s.io/apimachinery/pkg/util/wait"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/utils/clock"
	_ "pgregory.net/rapid"
)
