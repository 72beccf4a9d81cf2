package app

import "github.com/nexo-im/nexo/configs"

// SetModeration replaces the word filter's words and action at run time
// (SIGHUP; moderation.blocked_words_file is read again). On an error —
// the file cannot be read, a word is too long — the filter in force is
// kept and the error returned for the caller to log.
func (a *App) SetModeration(m configs.Moderation) error {
	if err := a.words.Reload(m); err != nil {
		return err
	}
	a.log.Info("word filter reloaded", "words", a.words.Words(), "action", m.Action)
	return nil
}
