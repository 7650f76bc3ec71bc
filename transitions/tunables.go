package transitions

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Tunable is one field of Config as tools see it: transcripts set it by Key (`config
// retry-after-cap=1m`), the CLI makes a flag of it (`--retry-after-cap`), the journal header
// records it by JSON. All of them are derived from Config's own fields and tags, so a new field
// with a json tag and a help tag is a new transcript key and a new flag with no other edit
// (docs/design.md, "How to add a tunable").
type Tunable struct {
	// JSON is the field's json name, as the journal header records it: "retryAfterCap".
	JSON string
	// Key is JSON in kebab case: "retry-after-cap". Transcripts and the CLI use it.
	Key string
	// Help is the field's `help` tag, one line for a flag's usage.
	Help string
	// CLI is false for a field the CLI does not make a flag of (`cli:"-"`).
	CLI   bool
	Type  reflect.Type
	index int
}

var tunables = func() []Tunable {
	var out []Tunable
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		default:
			panic(fmt.Sprintf("transitions: Config.%s: a tunable of kind %s has no text form; teach Tunable.Set it", f.Name, f.Type.Kind()))
		}
		out = append(out, Tunable{JSON: name, Key: kebab(name), Help: f.Tag.Get("help"), CLI: f.Tag.Get("cli") != "-",
			Type: f.Type, index: i})
	}
	return out
}()

// Tunables lists Config's tunables in field order: every field with a json name (Backoff,
// a policy rather than a value, is not one).
func Tunables() []Tunable { return append([]Tunable(nil), tunables...) }

// LookupTunable finds a tunable by Key.
func LookupTunable(key string) (Tunable, bool) {
	for _, t := range tunables {
		if t.Key == key {
			return t, true
		}
	}
	return Tunable{}, false
}

// IsBool reports whether the tunable is a switch (a bare `watch-list` turns it on).
func (t Tunable) IsBool() bool { return t.Type.Kind() == reflect.Bool }

// Set parses text into the field of c: a duration ("1m30s"), an integer, a float or a bool.
func (t Tunable) Set(c *Config, text string) error {
	v := reflect.ValueOf(c).Elem().Field(t.index)
	var err error
	switch {
	case t.Type == reflect.TypeFor[time.Duration]():
		var d time.Duration
		if d, err = time.ParseDuration(text); err == nil {
			v.SetInt(int64(d))
		}
	case t.Type.Kind() == reflect.Bool:
		var b bool
		if b, err = strconv.ParseBool(text); err == nil {
			v.SetBool(b)
		}
	case t.Type.Kind() == reflect.Int || t.Type.Kind() == reflect.Int64:
		var n int64
		if n, err = strconv.ParseInt(text, 10, t.Type.Bits()); err == nil {
			v.SetInt(n)
		}
	case t.Type.Kind() == reflect.Uint64:
		var n uint64
		if n, err = strconv.ParseUint(text, 10, 64); err == nil {
			v.SetUint(n)
		}
	case t.Type.Kind() == reflect.Float64:
		var f float64
		if f, err = strconv.ParseFloat(text, 64); err == nil {
			v.SetFloat(f)
		}
	}
	if err != nil {
		return fmt.Errorf("%s=%s: %w", t.Key, text, err)
	}
	return nil
}

// Pointer is the address of the field in c: a *time.Duration, *int, *int64, *uint64, *float64
// or *bool, for flag packages that bind to variables.
func (t Tunable) Pointer(c *Config) any {
	return reflect.ValueOf(c).Elem().Field(t.index).Addr().Interface()
}

// Format prints the field of c as Set reads it back.
func (t Tunable) Format(c Config) string {
	v := reflect.ValueOf(c).Field(t.index)
	if t.Type == reflect.TypeFor[time.Duration]() {
		return time.Duration(v.Int()).String()
	}
	return fmt.Sprint(v.Interface())
}

// Defaults is the configuration New fills in for the zero Config.
func Defaults() Config { return MustNew(Config{}).Config() }

// kebab turns a json name into a key: retryAfterCap → retry-after-cap, resumeRVLifetime →
// resume-rv-lifetime.
func kebab(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 &&
			(unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
