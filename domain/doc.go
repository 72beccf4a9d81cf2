// Package domain holds Nexo's core vocabulary: users, groups, messages,
// conversations, seq and cursor rules, and the sentinel errors every other
// package speaks. It imports only the standard library; storage rows and wire
// JSON live in store/ and gateway/.
package domain
