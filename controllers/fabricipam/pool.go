package fabricipam

import (
	"errors"
	"fmt"
)

// pool hands out the values from first to last (inclusive, in next's order) to keys, next-fit.
type pool[T comparable] struct {
	first, last T
	next        func(T) T
	byKey       map[string]T
	byValue     map[T]string
	cursor      T
}

// errExhausted says that every value of a pool is taken.
var errExhausted = errors.New("none left: every one is in use")

func newPool[T comparable](first, last T, next func(T) T) *pool[T] {
	return &pool[T]{first: first, last: last, next: next, byKey: map[string]T{}, byValue: map[T]string{}, cursor: first}
}

// restore records that key holds v, refusing a value two keys claim.
func (p *pool[T]) restore(key string, v T) error {
	if other, ok := p.byValue[v]; ok && other != key {
		return fmt.Errorf("%v is claimed by both %s and %s", v, other, key)
	}
	if old, ok := p.byKey[key]; ok {
		delete(p.byValue, old)
	}
	p.byKey[key], p.byValue[v] = v, key
	return nil
}

// allocate returns key's value, giving it the first free one from the cursor on if it has none.
func (p *pool[T]) allocate(key string) (T, error) {
	if v, ok := p.byKey[key]; ok {
		return v, nil
	}
	v := p.cursor
	for {
		if _, taken := p.byValue[v]; !taken {
			p.byKey[key], p.byValue[v] = v, key
			p.cursor = p.step(v)
			return v, nil
		}
		v = p.step(v)
		if v == p.cursor {
			var zero T
			return zero, errExhausted
		}
	}
}

// step is the value after v, wrapping from last to first.
func (p *pool[T]) step(v T) T {
	if v == p.last {
		return p.first
	}
	return p.next(v)
}

// release frees key's value.
func (p *pool[T]) release(key string) {
	if v, ok := p.byKey[key]; ok {
		delete(p.byKey, key)
		delete(p.byValue, v)
	}
}
