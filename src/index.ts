export * from './core';
export * from './names';
