package transitions

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTunableKeys(t *testing.T) {
	for json, key := range map[string]string{
		"retryAfterCap": "retry-after-cap", "resumeRVLifetime": "resume-rv-lifetime", "seed": "seed",
		"watchTimeoutMin": "watch-timeout-min", "quickEndsBeforeBackoff": "quick-ends-before-backoff",
	} {
		assert.Equal(t, key, kebab(json))
	}
}

// Every field of Config the journal header records is a tunable, with a help line unless the
// CLI leaves it out; each one's text form reads back to the same value.
func TestEveryRecordedFieldIsATunable(t *testing.T) {
	b, err := json.Marshal(Defaults())
	require.NoError(t, err)
	var recorded map[string]any
	require.NoError(t, json.Unmarshal(b, &recorded))
	keys := map[string]bool{}
	for _, tun := range Tunables() {
		keys[tun.JSON] = true
		if tun.CLI {
			assert.NotEmpty(t, tun.Help, "%s has no help tag", tun.JSON)
		}
		got, ok := LookupTunable(tun.Key)
		require.True(t, ok)
		assert.Equal(t, tun.JSON, got.JSON)

		var c Config
		def := Defaults()
		require.NoError(t, tun.Set(&c, tun.Format(def)), tun.Key)
		assert.Equal(t, reflect.ValueOf(def).Field(tun.index).Interface(), reflect.ValueOf(c).Field(tun.index).Interface(), tun.Key)
	}
	for k := range recorded {
		assert.True(t, keys[k], "the journal records %s, which is no tunable", k)
	}
}

func TestTunableSet(t *testing.T) {
	var c Config
	set := func(key, v string) error {
		tun, ok := LookupTunable(key)
		require.True(t, ok, key)
		return tun.Set(&c, v)
	}
	require.NoError(t, set("retry-after-cap", "90s"))
	require.NoError(t, set("page-size", "-1"))
	require.NoError(t, set("watch-list", "true"))
	require.NoError(t, set("retry-after-spread", "0.5"))
	require.NoError(t, set("seed", "7"))
	assert.Equal(t, Config{RetryAfterCap: 90 * time.Second, PageSize: -1, WatchList: true, RetryAfterSpread: 0.5, Seed: 7}, c)
	assert.ErrorContains(t, set("quick-watch", "soon"), "quick-watch=soon")
	assert.ErrorContains(t, set("internal-error-rewatches", "x"), "internal-error-rewatches=x")
	_, ok := LookupTunable("backoff")
	assert.False(t, ok, "the backoff is a policy, not a tunable")
}
