package config

import "github.com/spf13/pflag"

// The flags of the API server and of the client commands.
var (
	ServerFlags = []string{"addr", "redis-url", "namespace", "admin-key", "insecure", "max-body-bytes", "session-ttl"}
	ClientFlags = []string{"url", "token"}
)

// BindFlags binds onto fs the flags of the settings named (by flag name)
// that a command takes, writing into c. A flag's default is c's value
// when it is bound (its variable's, else the default), and the flag's
// text is read by the setting's own rule, so a flag overrides its
// variable and means the same. A name the table does not have panics: a
// command binds only flags of the table.
func (c *Config) BindFlags(fs *pflag.FlagSet, flags ...string) {
	for _, name := range flags {
		s, ok := settingOfFlag(name)
		if !ok {
			panic("config: no setting has the flag --" + name)
		}
		f := fs.VarPF(&flagValue{c: c, s: s}, name, "", s.Usage+" ("+s.Env+")")
		if s.into.kind() == "bool" {
			f.NoOptDefVal = "true" // --insecure alone
		}
		if s.Secret {
			f.DefValue = "" // --help does not show it
		}
	}
}

func settingOfFlag(name string) (Setting, bool) {
	for _, s := range Settings {
		if s.Flag != "" && s.Flag == name {
			return s, true
		}
	}
	return Setting{}, false
}

// flagValue is a pflag.Value over one setting's field of a Config.
type flagValue struct {
	c *Config
	s Setting
}

func (v *flagValue) String() string     { return v.s.into.show(v.c) }
func (v *flagValue) Type() string       { return v.s.into.kind() }
func (v *flagValue) Set(t string) error { return v.s.into.set(v.c, t) }
